/**
 * The consistency checker's verdict on its rotating keys (consistency-rotating.ts), whose loads may
 * take a kept first read: each key judged as every other key is (consistency-records.ts), split by
 * who wrote it (through the wrapper: must be 0 stale; outside the SDK: counted), and the gaps the
 * role is there for — a reader's first read answered, then a write of the key acknowledged, then
 * that reader's surge burst — found in the records, so a run shows the race was run, not assumed.
 */
import type { Read, Records, Verdict, Write } from './consistency-records.ts';

export interface KeptReadsVerdict {
  /** rotating keys seen, by writer kind: 'wrapper' (acked writes), 'plain' (outside), 'none' */
  kinds: Map<string, string>;
  verdicts: Map<string, Verdict>;
  /** stale reads of keys written through the wrapper / outside the SDK */
  stale: Verdict['stale'];
  staleOutside: Verdict['stale'];
  /** a write of the key acked after a reader's first read was answered and before its burst began */
  raced: { first: Read; burstStart: number; write: Write }[];
}

export function judgeKeptReads(records: Records, prefix: string, redisLostAt: number): KeptReadsVerdict {
  const keys = new Set<string>();
  for (const r of records.reads) if (r.key.startsWith(prefix)) keys.add(r.key);
  for (const w of records.writes) if (w.key.startsWith(prefix)) keys.add(w.key);
  const out: KeptReadsVerdict = { kinds: new Map(), verdicts: new Map(), stale: [], staleOutside: [], raced: [] };
  for (const key of keys) {
    const { reads, writes } = records.of(key);
    const kind = writes[0]?.kind ?? 'none';
    const verdict = records.judge(key, redisLostAt);
    out.kinds.set(key, kind);
    out.verdicts.set(key, verdict);
    (kind === 'plain' ? out.staleOutside : out.stale).push(...verdict.stale);
    const acked = writes.filter((w) => w.acked);
    const firsts = new Map<string, Read>();
    const bursts = new Map<string, number>();
    for (const r of reads) {
      if (r.via === 'ckf-first') firsts.set(r.proc, r);
      else if (r.via === 'ckf-burst') bursts.set(r.proc, Math.min(bursts.get(r.proc) ?? Infinity, r.start));
    }
    for (const [proc, first] of firsts) {
      const burstStart = bursts.get(proc);
      if (burstStart === undefined) continue;
      const write = acked.find((w) => w.end > first.end && w.end < burstStart);
      if (write !== undefined) out.raced.push({ first, burstStart, write });
    }
  }
  return out;
}
