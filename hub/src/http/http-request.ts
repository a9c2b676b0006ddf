/**
 * What every route of the HTTP API shares: a request as a handler sees it, the route shape, the
 * error answer (HttpError, one `HK_ERR_*` namespace with the SDK's ErrorCode) and the body,
 * query and key parsing that turns bad input into a 400 naming the field.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorCode, HotKeyError, ProtocolError } from '@hotkey/sdk';
import { assertKey } from '@hotkey/sdk/protocol';

/** An API refusal: its HTTP status, its `HK_ERR_*` code (ErrorCode), and the field at fault when there is one. */
export class HttpError extends HotKeyError {
  constructor(
    readonly status: number,
    code: ErrorCode,
    message: string,
    readonly field?: string,
  ) {
    super(code, message);
    this.name = 'HttpError';
  }
}

/** an answer's `error.code` this hub would also send (a forwarded refusal passes through) */
export const API_ERROR_CODES: ReadonlySet<string> = new Set<string>(Object.values(ErrorCode));

/** One request as a handler sees it: `params` are the pattern's captures, in order. */
export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  method: string;
  path: string;
  query: URLSearchParams;
  params: string[];
  /** what a write route adds to its `api_write` log event (e.g. the key) */
  fields: Record<string, unknown>;
}

/** 'none': anyone; 'read': the dashboard (or admin) token when one is set; 'write': the admin token. */
export type Auth = 'none' | 'read' | 'write';

export interface Route {
  /** 'GET' also answers HEAD; '*' any method */
  method: 'GET' | 'PUT' | 'POST' | 'DELETE' | '*';
  /** an exact path, or a regular expression whose groups become `params` */
  pattern: string | RegExp;
  auth: Auth;
  handler: (ctx: RequestContext) => void | Promise<void>;
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

export function sendError(res: ServerResponse, err: HttpError): void {
  if (res.headersSent) return;
  const error: Record<string, string> = { code: err.code, message: err.message };
  if (err.field !== undefined) error.field = err.field;
  if (err.status === 401) res.setHeader('www-authenticate', 'Bearer');
  sendJson(res, err.status, { error });
}

export async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit)
    throw new HttpError(413, ErrorCode.BodyTooLarge, `body of ${declared} bytes exceeds ${limit}`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new HttpError(413, ErrorCode.BodyTooLarge, `body exceeds ${limit} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') throw new HttpError(400, ErrorCode.BadRequest, 'request body must be JSON');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, ErrorCode.BadRequest, `body is not valid JSON: ${(err as Error).message}`);
  }
}

export function intParam(
  params: URLSearchParams,
  name: string,
  fallback: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const raw = params.get(name);
  if (raw === null || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > max)
    throw new HttpError(400, ErrorCode.BadRequest, `query parameter "${name}" must be an integer in [0, ${max}]`, name);
  return n;
}

export function checkedKey(key: unknown): string {
  try {
    assertKey(key);
  } catch (err) {
    if (err instanceof ProtocolError)
      throw new HttpError(
        400,
        err.code === ErrorCode.KeyTooLong ? ErrorCode.KeyTooLong : ErrorCode.BadRequest,
        err.message,
        'key',
      );
    throw err;
  }
  return key;
}

export function keyOf(body: unknown): string {
  const key = (body as { key?: unknown } | null)?.key;
  if (typeof body !== 'object' || body === null || key === undefined)
    throw new HttpError(400, ErrorCode.BadRequest, 'body must be {"key": "…"}', 'key');
  return checkedKey(key);
}

export function appOfPath(encoded: string): string {
  try {
    return decodeURIComponent(encoded);
  } catch {
    throw new HttpError(400, ErrorCode.BadRequest, 'app name in the path is not valid percent-encoding');
  }
}
