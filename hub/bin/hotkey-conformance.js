#!/usr/bin/env node
// Runs the compiled conformance kit (dist/conformance-cli.js); inside the workspace,
// `node --conditions=@hotkey/source --import tsx` runs its TypeScript source instead (see hotkey-hub.js).
import '#conformance';
