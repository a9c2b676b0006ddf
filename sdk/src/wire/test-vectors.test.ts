/**
 * The stored test vectors (test-vectors.json, published with PROTOCOL.md) against the current
 * codec: every frame must encode, decode or be refused exactly as the file says, and the file must
 * be what the generator writes today. A failure names the vector and says what changed.
 */
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MsgType, PROTOCOL_VERSION } from './protocol.ts';
import { VECTORS_PATH, vectorsJson } from './test-vectors.test-helper.ts';
import { checkOwnership, checkVector, storedVectors, type Vector } from './vectors.ts';

const text = readFileSync(VECTORS_PATH, 'utf8');
const file = storedVectors();

test('the file is for this protocol version, and the module serves what the file holds', () => {
  assert.equal(JSON.parse(text), file);
  assert.is(file.protocolVersion, PROTOCOL_VERSION);
  assert.ok(file.vectors.length > 50);
});

test('every stored vector encodes, decodes or is refused as the file says', () => {
  const problems = file.vectors.map(checkVector).filter((p) => p !== undefined);
  assert.equal(problems, [], problems.join('\n'));
});

test('key ownership: every stored hash and owner is what the code computes, and the owners differ', () => {
  const problems = checkOwnership(file.ownership);
  assert.equal(problems, [], problems.join('\n'));
  assert.ok(new Set(file.ownership.cases.map((c) => c.owner)).size > 1, 'the cases cover more than one owner');
  const broken = { ...file.ownership, hubs: ['hub-a', 'hub-b'] };
  assert.ok(
    checkOwnership(broken).some((p) => /is now owned by/.test(p)),
    'a changed member list is noticed',
  );
});

test('the file is what the generator writes now (else: pnpm --filter @hotkey/sdk run vectors)', () => {
  // compared as data: a formatter may lay the file out differently
  if (JSON.stringify(JSON.parse(text)) !== JSON.stringify(JSON.parse(vectorsJson())))
    assert.unreachable('sdk/src/wire/test-vectors.json is out of date: run `pnpm --filter @hotkey/sdk run vectors`');
});

test('every SDK message type has an accepted vector in its direction', () => {
  const toHub = [
    MsgType.Hello,
    MsgType.Report,
    MsgType.InvalidateRequest,
    MsgType.Applied,
    MsgType.Resync,
    MsgType.Lease,
    MsgType.Push,
  ];
  const toClient = [
    MsgType.Welcome,
    MsgType.Config,
    MsgType.Members,
    MsgType.Promote,
    MsgType.Invalidate,
    MsgType.Demote,
    MsgType.Snapshot,
    MsgType.Error,
    MsgType.Ack,
    MsgType.Grant,
    MsgType.Fill,
    MsgType.Value,
    MsgType.Limit,
  ];
  const accepted = (direction: string) =>
    new Set(
      file.vectors
        .filter((v) => v.direction === direction && v.decoded !== undefined)
        .map((v) => (v.decoded as { t: number }).t),
    );
  for (const t of toHub) assert.ok(accepted('to-hub').has(t), `no accepted to-hub vector of type ${t}`);
  for (const t of toClient) assert.ok(accepted('to-client').has(t), `no accepted to-client vector of type ${t}`);
  const refused = file.vectors.filter((v) => v.error !== undefined);
  for (const close of [4000, 4004, 4005])
    assert.ok(
      refused.some((v) => v.error!.close === close),
      `no refused vector with close ${close}`,
    );
});

test('a vector the code no longer reads is reported by name, with the error it now gets', () => {
  const report = file.vectors.find((v) => v.name === 'Report')!;
  // a count of 120 (0x78) turned into 0xc1, a byte msgpack never uses
  const broken: Vector = { ...report, input: undefined, hex: report.hex.replace(/78(03)$/, 'c1$1') };
  const problem = checkVector(broken);
  assert.ok(problem?.startsWith('vector "Report" (to-hub) no longer decodes: HK_ERR_PROTOCOL (close 4000)'), problem);
  const drifted: Vector = { ...report, decoded: { ...(report.decoded as object), counts: [121, 3] } };
  assert.match(checkVector(drifted) ?? '', /decodes differently/);
  const reencoded: Vector = { ...report, hex: report.hex.replace(/03$/, '04') };
  assert.match(checkVector(reencoded) ?? '', /encode\(\) now writes/);
  const accepted: Vector = {
    ...report,
    decoded: undefined,
    error: { code: 'HK_ERR_PROTOCOL', close: 4000, message: 'x' },
  };
  assert.match(checkVector(accepted) ?? '', /is accepted now .* but must be refused/);
});

test.run();
