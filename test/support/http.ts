/**
 * One HTTP helper for tests against a hub's API: JSON in and out, a bearer token when given, and a
 * deadline on every request. `body` is the parsed JSON, or undefined when the answer is not JSON.
 */
export interface HttpResult<T = any> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

/** @param init.token bearer token; undefined or null: no Authorization header */
export async function request<T = any>(
  url: string,
  init: RequestInit & { token?: string | null } = {},
  timeoutMs = 5000,
): Promise<HttpResult<T>> {
  const { token, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (token !== undefined && token !== null) headers.set('authorization', `Bearer ${token}`);
  if (rest.body !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
  const res = await fetch(url, { ...rest, headers, signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, body: body as T, text, headers: res.headers };
}
