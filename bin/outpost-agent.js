#!/usr/bin/env node
import { nodeIsRecentEnough } from "./node-guard.js";

if (nodeIsRecentEnough(new URL(import.meta.url))) await import("../agent/cli.ts");
