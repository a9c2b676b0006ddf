/**
 * The hub's REST API as the page uses it. Tokens travel in the Authorization header only; an
 * error answer `{error: {code, field?, message}}` becomes an ApiError the views show inline; its
 * code is always one of the hub's HK_ERR_* codes (ErrorCode in @hotkey/sdk).
 */
import { ErrorCode } from '@hotkey/sdk/errors';
import { getToken, readToken } from './token-store.ts';

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly field: string | undefined;
  constructor(status: number, code: string, message: string, field?: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.field = field;
  }
  /** the hub wants a (different) token */
  get isAuth(): boolean {
    return this.status === 401 || this.status === 403;
  }
}

/** The hub's HK_ERR_* code for an error answer without a JSON body (a proxy's page, say). */
function codeOfStatus(status: number): string {
  if (status === 401 || status === 403) return ErrorCode.Auth;
  if (status === 404) return ErrorCode.NotFound;
  return status >= 500 ? ErrorCode.Unavailable : ErrorCode.BadRequest;
}

/** @param [timeoutMs=10000] a request that takes longer fails with HK_ERR_TIMEOUT */
async function request(
  method: string,
  path: string,
  token: string,
  body?: unknown,
  timeoutMs = 10_000,
): Promise<unknown> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token !== '') headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
      cache: 'no-store',
    });
  } catch (err) {
    const timedOut = (err as Error).name === 'TimeoutError';
    throw new ApiError(
      0,
      timedOut ? ErrorCode.Timeout : ErrorCode.Unavailable,
      timedOut ? `${method} ${path} timed out` : `hub unreachable (${(err as Error).message})`,
    );
  }
  const text = await res.text();
  let data: unknown = undefined;
  if (text !== '') {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (!res.ok) {
    const e = (data as { error?: { code?: unknown; field?: unknown; message?: unknown } } | undefined)?.error;
    const code = typeof e?.code === 'string' ? e.code : codeOfStatus(res.status);
    const message =
      typeof e?.message === 'string' ? e.message : typeof data === 'string' && data !== '' ? data : res.statusText;
    throw new ApiError(res.status, code, message, typeof e?.field === 'string' ? e.field : undefined);
  }
  return data;
}

/** `body[field]` when the hub wraps a list in an object, `body` when it sends the list itself. */
export function listOf(body: unknown, field: string): unknown[] {
  if (Array.isArray(body)) return body;
  const inner = (body as Record<string, unknown> | undefined)?.[field];
  return Array.isArray(inner) ? inner : [];
}

export const api = {
  get: (path: string) => request('GET', path, readToken()),
  put: (path: string, body: unknown) => request('PUT', path, getToken('admin'), body),
  post: (path: string, body: unknown) => request('POST', path, getToken('admin'), body),
};

export const appPath = (app: string, rest: string) => `/api/apps/${encodeURIComponent(app)}/${rest}`;
