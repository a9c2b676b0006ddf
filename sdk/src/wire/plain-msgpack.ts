/**
 * The protocol is plain msgpack: nil, booleans, numbers, strings, binaries, arrays and maps. The
 * ext family (fixext 1–16, ext 8/16/32) carries msgpackr's extension types — Date, Set, Map,
 * RegExp, Error, typed arrays, big integers, records, structured-clone references — none of which
 * belongs in a frame, and msgpackr decodes them through one process-wide table with no option to
 * turn them off per decoder. So every frame is walked once before decoding and an ext token is
 * refused: nothing it names is ever constructed. The one exception is fixext 1 of type 0, msgpackr's
 * `undefined` (it builds nothing): msgpackr writes it for a field set to `undefined` unless told to
 * skip such fields, as codec.ts does, so a peer encoding with msgpackr's defaults (a Hello with
 * `token: undefined`) must still connect.
 *
 * The walk is linear and iterative (a count of values still owed, no recursion: deep nesting
 * cannot overflow the stack) and skips string and binary payloads without reading them.
 */

/** Where the first ext token (or the never-used 0xc1) starts, or -1 for a plain document. Truncation is left to the decoder. */
export function findExtension(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = bytes.byteLength;
  let pos = 0;
  let owed = 1; // values still to read: one document
  while (owed > 0 && pos < end) {
    owed--;
    const b = bytes[pos]!;
    if (b <= 0x7f || b >= 0xe0) {
      pos += 1; // fixint
    } else if (b <= 0x8f) {
      owed += 2 * (b & 0x0f); // fixmap
      pos += 1;
    } else if (b <= 0x9f) {
      owed += b & 0x0f; // fixarray
      pos += 1;
    } else if (b <= 0xbf) {
      pos += 1 + (b & 0x1f); // fixstr
    } else {
      switch (b) {
        case 0xc0: // nil
        case 0xc2: // false
        case 0xc3: // true
          pos += 1;
          break;
        case 0xc4: // bin 8
        case 0xd9: // str 8
          if (pos + 2 > end) return -1;
          pos += 2 + bytes[pos + 1]!;
          break;
        case 0xc5: // bin 16
        case 0xda: // str 16
          if (pos + 3 > end) return -1;
          pos += 3 + view.getUint16(pos + 1);
          break;
        case 0xc6: // bin 32
        case 0xdb: // str 32
          if (pos + 5 > end) return -1;
          pos += 5 + view.getUint32(pos + 1);
          break;
        case 0xcc: // uint 8
        case 0xd0: // int 8
          pos += 2;
          break;
        case 0xcd: // uint 16
        case 0xd1: // int 16
          pos += 3;
          break;
        case 0xca: // float 32
        case 0xce: // uint 32
        case 0xd2: // int 32
          pos += 5;
          break;
        case 0xcb: // float 64
        case 0xcf: // uint 64
        case 0xd3: // int 64
          pos += 9;
          break;
        case 0xdc: // array 16
          if (pos + 3 > end) return -1;
          owed += view.getUint16(pos + 1);
          pos += 3;
          break;
        case 0xdd: // array 32
          if (pos + 5 > end) return -1;
          owed += view.getUint32(pos + 1);
          pos += 5;
          break;
        case 0xde: // map 16
          if (pos + 3 > end) return -1;
          owed += 2 * view.getUint16(pos + 1);
          pos += 3;
          break;
        case 0xdf: // map 32
          if (pos + 5 > end) return -1;
          owed += 2 * view.getUint32(pos + 1);
          pos += 5;
          break;
        case 0xd4: // fixext 1: only msgpackr's `undefined` (type 0), which older encoders wrote for absent optional fields
          if (pos + 1 < end && bytes[pos + 1] === 0) {
            pos += 3;
            break;
          }
          return pos;
        default:
          // 0xc1 (never used), 0xc7–0xc9 (ext 8/16/32), 0xd5–0xd8 (fixext 2–16)
          return pos;
      }
    }
  }
  return -1;
}
