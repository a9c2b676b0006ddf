#!/usr/bin/env node
// Runs the compiled CLI (dist/cli.js): no TypeScript loader at run time. Inside the workspace,
// `node --conditions=@hotkey/source --import tsx` makes '#cli' the TypeScript source instead
// (see "imports" in package.json), which is how the tests run hubs.
// `hotkey-hub conformance …` runs the protocol conformance kit instead: a second bin in this
// package would leave `npx @hotkey/hub` unable to tell which one to run.
if (process.argv[2] === 'conformance') {
  process.argv.splice(2, 1);
  await import('#conformance');
} else {
  await import('#cli');
}
