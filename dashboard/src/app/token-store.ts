/**
 * Tokens the user typed: kept in sessionStorage (gone with the tab) and never put in a URL. The
 * admin token authorises writes; the read token is needed only when the hub runs with
 * `--dashboard-token`. Reads send the read token, or the admin token when only that one is set.
 */
export type TokenKind = 'admin' | 'read';

const STORAGE_KEY: Record<TokenKind, string> = { admin: 'hotkey.adminToken', read: 'hotkey.readToken' };
const memory: Record<TokenKind, string> = { admin: '', read: '' };

function storage(): Storage | undefined {
  try {
    return globalThis.sessionStorage;
  } catch {
    return undefined; // storage disabled: keep tokens in memory only
  }
}

export function getToken(kind: TokenKind): string {
  return storage()?.getItem(STORAGE_KEY[kind]) ?? memory[kind];
}

export function setToken(kind: TokenKind, token: string): void {
  memory[kind] = token;
  const s = storage();
  if (!s) return;
  if (token === '') s.removeItem(STORAGE_KEY[kind]);
  else s.setItem(STORAGE_KEY[kind], token);
}

export function readToken(): string {
  return getToken('read') || getToken('admin');
}
