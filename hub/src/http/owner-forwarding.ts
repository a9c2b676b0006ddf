/**
 * A request about a key that another hub owns (its QPS history, its promotion, an invalidation
 * its SDKs must hear) goes to that hub once, with the caller's Authorization; the owner answers
 * from its own state.
 */
import type { IncomingMessage } from 'node:http';
import { ErrorCode } from '@hotkey/sdk';
import type { Member } from '@hotkey/sdk/protocol';
import type { HubCore } from '../core/hub-core.ts';
import { API_ERROR_CODES, HttpError } from './http-request.ts';

/** how long a hub waits for the key's owner hub when it forwards a request (QPS history, promote) */
const OWNER_TIMEOUT_MS = 1000;
/** set on a forwarded request: the receiving hub answers from its own state, so two hubs that
 * briefly disagree on the owner (a member list changing) never bounce a request between them */
const FORWARDED_HEADER = 'x-hotkey-forwarded-by';

/** The http(s):// base of a member from its ws(s):// URL (`ws://h:p/ws` → `http://h:p`); undefined when unusable. */
export function httpBaseOf(wsUrl: string): string | undefined {
  let url: URL;
  try {
    url = new URL(wsUrl);
  } catch {
    return undefined;
  }
  const protocol = url.protocol === 'ws:' ? 'http:' : url.protocol === 'wss:' ? 'https:' : undefined;
  return protocol === undefined ? undefined : `${protocol}//${url.host}`;
}

/** The member to forward a request about `key` to: its owner when that is another hub; undefined: answer here. */
export function remoteOwner(core: HubCore, req: IncomingMessage, key: string): Member | undefined {
  if (req.headers[FORWARDED_HEADER] !== undefined) return undefined; // already forwarded once: no ping-pong
  const owner = core.ownerOf(key);
  return owner === undefined || owner.id === core.id ? undefined : owner;
}

/**
 * Asks `owner` (the hub that owns `key`) to answer this request and returns its JSON body. The
 * caller's Authorization goes along, so the owner applies its own auth; its refusals (401, 403,
 * 404, 422) pass through. No answer within OWNER_TIMEOUT_MS, or one that is not `expected`, is
 * 502 HK_ERR_OWNER_UNREACHABLE.
 */
export async function forwardToOwner(
  core: HubCore,
  req: IncomingMessage,
  owner: Member,
  key: string,
  request: { path: string; body?: unknown; what: string; expected: (body: Record<string, unknown>) => boolean },
): Promise<unknown> {
  const base = httpBaseOf(owner.url);
  if (base === undefined)
    throw new HttpError(
      502,
      ErrorCode.OwnerUnreachable,
      `hub ${owner.id} owns "${key.slice(0, 64)}" but advertises no usable URL (${owner.url.slice(0, 100) || 'none'})`,
    );
  const headers: Record<string, string> = { accept: 'application/json', [FORWARDED_HEADER]: core.id };
  if (req.headers.authorization !== undefined) headers.authorization = req.headers.authorization;
  const init: RequestInit = { headers, signal: AbortSignal.timeout(OWNER_TIMEOUT_MS) };
  if (request.body !== undefined) {
    headers['content-type'] = 'application/json';
    init.method = 'POST';
    init.body = JSON.stringify(request.body);
  }
  let status: number;
  let text: string;
  try {
    const res = await fetch(`${base}${request.path}`, init);
    status = res.status;
    text = await res.text();
  } catch (err) {
    const why =
      (err as Error).name === 'TimeoutError' ? `no answer within ${OWNER_TIMEOUT_MS} ms` : (err as Error).message;
    throw new HttpError(
      502,
      ErrorCode.OwnerUnreachable,
      `hub ${owner.id} owns "${key.slice(0, 64)}" and must answer ${request.what}, but ${base} cannot be reached: ${why}`,
    );
  }
  let body: { error?: { code?: unknown; message?: unknown } } | undefined;
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    body = undefined;
  }
  if (status === 200 && typeof body === 'object' && body !== null && request.expected(body as Record<string, unknown>))
    return body;
  const error = body?.error;
  if (
    status !== 200 &&
    typeof error?.code === 'string' &&
    API_ERROR_CODES.has(error.code) &&
    typeof error.message === 'string'
  ) {
    throw new HttpError(status, error.code as ErrorCode, `hub ${owner.id}: ${error.message}`);
  }
  throw new HttpError(
    502,
    ErrorCode.OwnerUnreachable,
    `hub ${owner.id} (${base}) answered HTTP ${status} without ${request.what}`,
  );
}
