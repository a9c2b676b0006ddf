/**
 * The cluster's member list as this hub sees it: the membership epoch, the members, and which of
 * them owns each key (rendezvous hashing over member ids, sdk/src/ownership.ts, the same function
 * the SDKs route reports with). The core replaces it whole on every membership change; `accept`
 * is what the aggregators use to ignore keys another hub decides.
 */
import { Ownership } from '@hotkey/sdk/ownership';
import type { Member } from '@hotkey/sdk/protocol';

/** What a membership change did, by member id. */
export interface MembersDiff {
  joined: string[];
  left: string[];
}

export class MemberView {
  readonly hubId: string;
  #epoch: number;
  #members: Member[];
  #ownership: Ownership;
  #accept: ((key: string) => boolean) | undefined;

  constructor(hubId: string, epoch: number, members: Member[]) {
    this.hubId = hubId;
    this.#epoch = epoch;
    this.#members = members;
    this.#ownership = new Ownership([]);
    this.#own(members);
  }

  get epoch(): number {
    return this.#epoch;
  }

  get members(): Member[] {
    return this.#members;
  }

  /** whether this hub decides `key`; undefined while it is the only member (it decides every key) */
  get accept(): ((key: string) => boolean) | undefined {
    return this.#accept;
  }

  /** The member that owns `key`; undefined with no members. */
  ownerOf(key: string): Member | undefined {
    const id = this.#ownership.owner(key);
    return id === undefined ? undefined : this.#members.find((m) => m.id === id);
  }

  /** Takes the new list; returns who joined and who left since the last one. */
  change(epoch: number, members: Member[]): MembersDiff {
    const before = this.#members;
    const diff = {
      joined: members.filter((m) => !before.some((o) => o.id === m.id)).map((m) => m.id),
      left: before.filter((o) => !members.some((m) => m.id === o.id)).map((o) => o.id),
    };
    this.#epoch = epoch;
    this.#members = members;
    this.#own(members);
    return diff;
  }

  #own(members: Member[]): void {
    const ownership = new Ownership(members.map((m) => m.id));
    this.#ownership = ownership;
    this.#accept = ownership.ids.length > 1 ? (key) => ownership.owner(key) === this.hubId : undefined;
  }
}
