/**
 * key-specs.ts against a live redis-server: the table is what the server's COMMAND says (each
 * key spec's begin_search and find_keys), every write of the command table has keys found, and
 * `keysOf` finds the keys `COMMAND GETKEYS` finds for real invocations.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { WRITES } from './command-table.ts';
import { KEY_SPECS, keysOf } from './key-specs.ts';
import { withResp2Call } from './live-redis.test-helper.ts';

const call = withResp2Call(test);

type Flat = unknown[];
/** a RESP2 map as [name, value, name, value …] */
const field = (flat: Flat, name: string): unknown => flat[flat.indexOf(name) + 1];

/** One key spec of COMMAND INFO in the table's encoding. */
function encode(spec: Flat): unknown {
  const bs = field(spec, 'begin_search') as Flat;
  const fk = field(spec, 'find_keys') as Flat;
  const bsSpec = field(bs, 'spec') as Flat;
  const fkSpec = field(fk, 'spec') as Flat;
  let begin: unknown;
  if (field(bs, 'type') === 'index') begin = field(bsSpec, 'index');
  else if (field(bs, 'type') === 'keyword') begin = [field(bsSpec, 'keyword'), field(bsSpec, 'startfrom')];
  else return null;
  if (field(fk, 'type') === 'range')
    return [begin, 'r', field(fkSpec, 'lastkey'), field(fkSpec, 'keystep'), field(fkSpec, 'limit')];
  if (field(fk, 'type') === 'keynum')
    return [begin, 'n', field(fkSpec, 'keynumidx'), field(fkSpec, 'firstkey'), field(fkSpec, 'keystep')];
  return null;
}

test("the table is the server's COMMAND key specs; every write the server knows has an entry", async () => {
  const infos = (await call('COMMAND')) as Flat[];
  const server = new Map<string, unknown[]>();
  for (const info of infos) {
    server.set(String(info[0]), ((info[8] as Flat[]) ?? []).map(encode));
    for (const sub of (info[9] as Flat[]) ?? []) server.set(String(sub[0]), ((sub[8] as Flat[]) ?? []).map(encode));
  }
  for (const [name, specs] of Object.entries(KEY_SPECS)) assert.equal(specs, server.get(name), name);
  const missing = [...WRITES].filter(
    (name) =>
      server.has(name) && KEY_SPECS[name] === undefined && ![...server.keys()].some((n) => n.startsWith(`${name}|`)),
  );
  assert.equal(missing, [], 'writes of this server without key specs in the table');
});

test('keysOf finds what COMMAND GETKEYS finds', async () => {
  const cases: string[][] = [
    ['SET', 'k', 'v'],
    ['mset', 'a', '1', 'b', '2'],
    ['EVAL', 'return 1', '2', 'k1', 'k2', 'x'],
    ['FCALL', 'f', '1', 'k1', 'x'],
    ['ZUNIONSTORE', 'd', '2', 'a', 'b', 'WEIGHTS', '1', '2'],
    ['XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', 's1', 's2', '>', '>'],
    ['GEORADIUS', 'k', '1', '2', '3', 'm', 'STORE', 'dst'],
    ['XGROUP', 'CREATE', 's', 'g', '$'],
    ['LMOVE', 'a', 'b', 'LEFT', 'RIGHT'],
    ['BLMPOP', '0', '2', 'a', 'b', 'LEFT'],
    ['BITOP', 'AND', 'dst', 'a', 'b'],
    ['GET', 'g'],
    ['MGET', 'a', 'b', 'c'],
    ['HGET', 'h', 'f'],
  ];
  for (const argv of cases) {
    const expected = ((await call('COMMAND', 'GETKEYS', ...argv)) as string[]).map(String);
    assert.equal(keysOf(argv), expected, argv.join(' '));
  }
  // SORT's STORE destination has no key spec Redis can describe: every argument counts, the store target among them
  assert.ok(keysOf(['SORT', 'k', 'BY', 'w_*', 'STORE', 'dst'])!.includes('dst'));
  assert.is(keysOf(['PING']), undefined, 'a command without keys in the table');
});

test.run();
