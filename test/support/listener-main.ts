/**
 * edge/listen.ts alone in its own process, answering "ok" (or echoing, at /echo); the options (JSON) are
 * the first argument. Prints its port. A test that drives it sees a stuck event loop as a request
 * that is not answered, instead of a test process that never ends.
 */
import type { ServerResponse } from "node:http";
import { listen } from "../../edge/listen.ts";

// /echo answers at once and sends back each chunk of the request body as it comes (a long stream).
const listener = await listen(
  (req, response) => {
    const res = response as ServerResponse;
    if (req.url !== "/echo") return void res.end("ok");
    res.writeHead(200);
    req.on("data", (chunk: Buffer) => res.write(chunk));
    req.on("end", () => res.end());
  },
  0,
  "127.0.0.1",
  JSON.parse(process.argv[2] ?? "{}"),
);
process.stdout.write(`${listener.port}\n`);
process.on("SIGTERM", () => void listener.close(0).then(() => process.exit(0)));
