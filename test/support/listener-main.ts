/**
 * edge/listen.ts alone in its own process, answering "ok" to every request; the options (JSON) are
 * the first argument. Prints its port. A test that drives it sees a stuck event loop as a request
 * that is not answered, instead of a test process that never ends.
 */
import { listen } from "../../edge/listen.ts";

const listener = await listen((_req, res) => res.end("ok"), 0, "127.0.0.1", JSON.parse(process.argv[2] ?? "{}"));
process.stdout.write(`${listener.port}\n`);
process.on("SIGTERM", () => void listener.close(0).then(() => process.exit(0)));
