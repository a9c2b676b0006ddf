#!/usr/bin/env node
// The hub is written in TypeScript and run through tsx, so the bin needs no build step.
import { register } from 'tsx/esm/api';
register();
await import('../src/cli.ts');
