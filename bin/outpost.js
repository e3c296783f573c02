#!/usr/bin/env node
import "../server/cli.ts";
