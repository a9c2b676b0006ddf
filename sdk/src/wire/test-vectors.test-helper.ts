/**
 * The protocol's test vectors, generated from the codec (PROTOCOL.md, "Test vectors"). Each case
 * is a frame as bytes (hex) and what the current code makes of it: the decoded message, or the
 * error and close code it is refused with. Cases with an `input` are also what `encode(input)`
 * writes, byte for byte; cases without one are other valid (or invalid) encodings a peer may send.
 *
 * Run it to rewrite test-vectors.json (`pnpm --filter @hotkey/sdk run vectors`); the unit test
 * beside it fails when the file and the code disagree. Hex strings may hold runs written
 * `<xx*N>` (byte xx, N times) so that frames at the size limits stay readable.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { hashString } from '../hash.ts';
import { Ownership } from '../ownership.ts';
import { encode, packValue, PROTOCOL_VERSION, type Message } from './protocol.ts';
import { CASES } from './test-vector-cases.test-helper.ts';
import { bytesToHex, hexToBytes, run, toJson, type OwnershipVectors, type Vector, type VectorFile } from './vectors.ts';

/** Every case run through the current code. */
export function buildVectors(): VectorFile {
  const vectors = CASES.map((c): Vector => {
    const bytes =
      c.hex !== undefined
        ? hexToBytes(c.hex)
        : c.direction === 'value'
          ? packValue(c.input)
          : encode(c.input as Message);
    const vector: Vector = { name: c.name, direction: c.direction, hex: bytesToHex(bytes) };
    if (c.hex === undefined) vector.input = toJson(c.input);
    Object.assign(vector, run(c.direction, bytes));
    if (c.note !== undefined) vector.note = c.note;
    return vector;
  });
  return {
    protocolVersion: PROTOCOL_VERSION,
    generatedBy: 'pnpm --filter @hotkey/sdk run vectors (sdk/src/wire/test-vectors.test-helper.ts)',
    format:
      'hex: the frame, "<xx*N>" = byte xx N times. direction: to-hub (a hub decodes it), to-client (a client decodes it), value (packValue bytes). input: what encode() wrote (hex is exactly its output). decoded or error {code, close}: what the decoder makes of it. JSON forms: {"$bin": hex} bin, {"$date": iso}, {"$set": [...]}, {"$bigint": "n"}, {"$undefined": true}. ownership: hash(key) (FNV-1a over UTF-16 code units, then fmix32) and the owner of each key among hubs (rendezvous hashing).',
    vectors,
    ownership: ownershipVectors(),
  };
}

/** Keys (ASCII, Latin-1, outside the BMP: hashed by UTF-16 code unit) and their owners among three hubs. */
function ownershipVectors(): OwnershipVectors {
  const hubs = ['hub-a', 'hub-b', 'hub-c'];
  const ownership = new Ownership(hubs);
  const keys = ['item:42', 'item:43', 'cart:7', 'session:ana@example.com', 'café', 'emoji:\u{1f525}', 'k', 'hub-a'];
  for (let i = 0; i < 8; i++) keys.push(`item:${1000 + i}`);
  return { hubs, cases: keys.map((key) => ({ key, hash: hashString(key), owner: ownership.owner(key)! })) };
}

export const VECTORS_PATH = fileURLToPath(new URL('./test-vectors.json', import.meta.url));

export function vectorsJson(): string {
  return `${JSON.stringify(buildVectors(), null, 1)}\n`;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(VECTORS_PATH, vectorsJson());
  process.stdout.write(`wrote ${buildVectors().vectors.length} vectors to ${VECTORS_PATH}\n`);
}
