/**
 * The write table against the real redis-server's own command table: every command that writes
 * keys (flag `write` with keys, or a key spec that is RW/OW/RM: EVAL, FCALL …) is handled, and
 * read-only scripts are not. Fails when a server version adds a write command the table lacks.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { KEYSPACE_WRITES, WRITES } from './command-table.ts';
import { withResp2Call } from './live-redis.test-helper.ts';

const call = withResp2Call(test);

type Info = [string, number, string[], number, number, number, string[], string[], Array<unknown[]>, Info[]];

/** A key spec entry comes as a flat [name, value, name, value …] array in RESP2. */
function specFlags(spec: unknown[]): string[] {
  const i = spec.indexOf('flags');
  return i >= 0 ? (spec[i + 1] as string[]).map(String) : [];
}

function writesKeys(info: Info): boolean {
  const flags = info[2].map(String);
  const hasKeys = info[3] > 0 || flags.includes('movablekeys');
  if (!hasKeys) return false;
  if (flags.includes('write')) return true;
  return (info[8] ?? []).some((spec) => specFlags(spec).some((f) => f === 'RW' || f === 'OW' || f === 'RM'));
}

test('every command of the server that writes keys is in the write table', async () => {
  const infos = (await call('COMMAND')) as Info[];
  const wanted: string[] = [];
  for (const info of infos) {
    if (writesKeys(info)) wanted.push(info[0]);
    // a subcommand is sent under its container's name (xgroup create …)
    for (const sub of info[9] ?? []) if (writesKeys(sub)) wanted.push(info[0]);
  }
  const missing = [...new Set(wanted)].filter((name) => !WRITES.has(name)).sort();
  assert.equal(missing, [], `write commands not handled: ${missing.join(' ')}`);
  const handled = new Set(wanted).size;
  console.log(
    `# write commands with keys (COMMAND on this server): ${handled}/${handled} handled; keyspace-wide (no keys): ${[...KEYSPACE_WRITES].join(' ')}`,
  );
});

test('read-only scripts and reads are not writes; every keyspace-wide write exists on the server', async () => {
  for (const name of ['eval_ro', 'evalsha_ro', 'fcall_ro', 'get', 'hget', 'hgetall', 'exists'])
    assert.not.ok(WRITES.has(name), name);
  for (const name of KEYSPACE_WRITES) {
    const [info] = (await call('COMMAND', 'INFO', name)) as Info[];
    assert.ok(info && info[2].map(String).includes('write'), name);
  }
});

test.run();
