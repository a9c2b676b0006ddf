#!/usr/bin/env node
// Runs the compiled CLI (dist/cli.js): no TypeScript loader at run time. Inside the workspace,
// `node --conditions=@hotkey/source --import tsx` makes '#cli' the TypeScript source instead
// (see "imports" in package.json), which is how the tests run hubs.
import '#cli';
