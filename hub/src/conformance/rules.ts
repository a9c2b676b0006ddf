/**
 * The protocol rules the conformance kit checks, by their number in sdk/src/wire/PROTOCOL.md
 * ("Rules"), and the tally of one run: each rule holds, is broken (with what was seen), or was not
 * checked.
 */

export const HUB_RULES = {
  H1: 'the first frame after an accepted Hello is Welcome (v as negotiated), then a Snapshot, before any broadcast',
  H2: 'every frame the hub sends is binary and decodes as a hub -> client message',
  H3: "a Hello whose versions (vmin..v) miss the hub's gets Error HK_ERR_VERSION and close 4001",
  H4: 'a first frame that is not Hello, a text frame and a second Hello get HK_ERR_PROTOCOL and close 4000',
  H5: 'every refused client -> hub test vector gets its Error code and close code',
  H6: 'an invalid app name gets 4002; a wrong token gets 4003',
  H7: 'a Lease is answered by a Grant with its id and ms in [1, 3600000]',
  H8: 'sequenced broadcasts carry seq = previous + 1 after the Welcome / Snapshot seq',
  H9: 'a Resync is answered with a Snapshot',
  H10: 'an InvalidateRequest is broadcast as an Invalidate to every connection of the app',
  H11: 'the Ack carries the request id and the Invalidate seq, and waits until every connection applied',
  H12: 'a session that does not apply is fenced: no Ack before its lease ends, named in fenced, no Grant while it lags',
  H13: 'Applied ahead of the last broadcast gets close 4000',
  H20: 'version 3: a Hold is answered by one Held with its id, one r per key, and w >= every w sent before',
  H21: 'version 3: a write of a key nobody holds is acked with no Invalidate or Drop to another connection',
  H22: 'version 3: a write of a key another connection holds sends it a Drop, acked only after its Applied d',
  H23: "version 3: a Hold whose since is below the key's last write is answered r = 1",
} as const;

export const CLIENT_RULES = {
  C1: 'the first frame is a binary Hello with v = 2; nothing else before the Welcome',
  C2: 'every frame the client sends decodes as a client -> hub message',
  C3: 'the client asks for a lease after the Welcome and renews it before it lapses',
  C4: 'after an Invalidate the client sends Applied with a seq >= its seq',
  C5: 'a sequence gap makes the client send Resync',
  C6: 'a frame that breaks the protocol makes the client close, then reconnect with a Hello',
  C7: 'after a non-fatal close (4008) the client reconnects with a Hello',
  C8: 'after close 4003 the client does not reconnect',
} as const;

export type RuleId = keyof typeof HUB_RULES | keyof typeof CLIENT_RULES;
export type RuleStatus = 'ok' | 'fail' | 'skip';

export interface RuleResult {
  id: string;
  rule: string;
  status: RuleStatus;
  /** what was seen when broken, or why it was skipped */
  details: string[];
}

/** details kept per rule: a broken hub may break one rule a thousand times */
const MAX_DETAILS = 8;

export class Results {
  readonly #rules: Map<string, RuleResult>;

  constructor(rules: Readonly<Record<string, string>>) {
    this.#rules = new Map(
      Object.entries(rules).map(([id, rule]) => [id, { id, rule, status: 'skip', details: [] } as RuleResult]),
    );
  }

  /** The rule was checked once and held (a rule broken elsewhere stays broken). */
  pass(id: RuleId): void {
    const r = this.#get(id);
    if (r.status === 'skip') {
      r.status = 'ok';
      r.details = [];
    }
  }

  fail(id: RuleId, detail: string): void {
    const r = this.#get(id);
    if (r.status !== 'fail') r.details = [];
    r.status = 'fail';
    if (r.details.length < MAX_DETAILS) r.details.push(detail);
  }

  /** Not checked, and why (only while nothing of the rule was checked). */
  skip(id: RuleId, why: string): void {
    const r = this.#get(id);
    if (r.status === 'skip' && r.details.length === 0) r.details.push(why);
  }

  /** A part of the rule not checked: the reason if nothing else of it was, else a note beside its pass. */
  partly(id: RuleId, why: string): void {
    const r = this.#get(id);
    if (r.status === 'ok') r.details.push(`not checked: ${why}`);
    else this.skip(id, why);
  }

  /** Passes `id` when `ok`, else fails it with `detail`; returns `ok`. */
  check(id: RuleId, ok: boolean, detail: string): boolean {
    if (ok) this.pass(id);
    else this.fail(id, detail);
    return ok;
  }

  list(): RuleResult[] {
    return [...this.#rules.values()];
  }

  get broken(): boolean {
    return this.list().some((r) => r.status === 'fail');
  }

  /** One line per rule, then a summary line. */
  format(title: string): string {
    const list = this.list();
    const count = (s: RuleStatus) => list.filter((r) => r.status === s).length;
    const lines = list.map((r) => {
      const tag = r.status === 'ok' ? 'ok  ' : r.status === 'fail' ? 'FAIL' : 'skip';
      const extra = r.details.length === 0 ? '' : `\n${r.details.map((d) => `       ${d}`).join('\n')}`;
      return `${tag} ${r.id.padEnd(4)} ${r.rule}${extra}`;
    });
    return `${title}\n${lines.join('\n')}\n${count('ok')} hold, ${count('fail')} broken, ${count('skip')} not checked\n`;
  }

  #get(id: string): RuleResult {
    const r = this.#rules.get(id);
    if (r === undefined) throw new TypeError(`unknown rule ${id}`);
    return r;
  }
}
