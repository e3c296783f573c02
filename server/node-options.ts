/**
 * The Node.js options `outpost serve` runs with; package.json's start script and the Dockerfile
 * say the same, and every harness that starts a server uses this. V8's worker pool is sized to the
 * machine (0: one thread fewer than its cores) instead of Node's fixed four: on a machine with
 * fewer cores than that, the garbage collector's parallel helpers took turns with the server's own
 * thread and its database, and cost more CPU than they saved (docs/operations.md, Performance).
 */
export const serveNodeOptions: readonly string[] = ["--v8-pool-size=0"];
