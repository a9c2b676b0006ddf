/**
 * The window handoff's series at `GET /metrics` (core/membership/handoff.ts): what this hub handed over on
 * membership changes, what it took over, and what it refused, one series per refusal reason.
 */
import { HandoffRefusal } from '../core/membership/handoff-chunk.ts';
import type { HandoffCounters } from '../core/membership/handoff.ts';

/** a counter series reading the handoff counters (metric-series.ts makes its Family) */
type Make<F> = (name: string, help: string, read: (h: HandoffCounters) => number) => F;

const REFUSAL_HELP: Record<HandoffRefusal, string> = {
  malformed: 'chunks that were not a handoff chunk for this hub',
  too_large: 'chunks over the size bounds, or past the keys one sender may hand over per epoch',
  not_member: 'chunks from a hub that is not a member (nor left in the last seconds)',
  stale_epoch: 'chunks of an epoch older than this hub’s, or of one it never reached',
  not_owner: 'keys this hub does not own, or that the sender cannot have owned',
  conflict: 'keys another hub handed over already at the same epoch (two hubs claiming one key)',
  unknown_app: 'chunks of an app this hub does not know',
  backlog: 'chunks refused because too many waited for their epoch',
};

export function handoffFamilies<F>(family: Make<F>): F[] {
  return [
    family('hotkey_handoff_chunks_sent_total', 'Window handoff: chunks sent to new owners.', (h) => h.chunksSent),
    family('hotkey_handoff_keys_sent_total', 'Window handoff: keys handed over to new owners.', (h) => h.keysSent),
    family('hotkey_handoff_bytes_sent_total', 'Window handoff: bytes of the chunks sent.', (h) => h.bytesSent),
    family(
      'hotkey_handoff_keys_dropped_total',
      'Window handoff: keys not handed over, past handoffMaxKeys (the emptiest windows first).',
      (h) => h.keysDropped,
    ),
    family('hotkey_handoff_chunks_received_total', 'Window handoff: chunks received.', (h) => h.chunksReceived),
    family(
      'hotkey_handoff_keys_received_total',
      'Window handoff: keys whose window was merged here.',
      (h) => h.keysReceived,
    ),
    family(
      'hotkey_handoff_keys_promoted_total',
      'Window handoff: handed-over keys promoted here by the merge.',
      (h) => h.keysPromoted,
    ),
    ...Object.values(HandoffRefusal).map((reason) =>
      family(
        `hotkey_handoff_refused_${reason}_total`,
        `Window handoff refused (${reason}): ${REFUSAL_HELP[reason]}.`,
        (h) => h.refused[reason],
      ),
    ),
  ];
}
