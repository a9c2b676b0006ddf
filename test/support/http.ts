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

/**
 * The hub's `hotkey_*` series at `/metrics`, each summed over its labels. Throws when the hub does
 * not answer within `timeoutMs`.
 */
export async function scrapeMetrics(httpUrl: string, timeoutMs = 10_000): Promise<Record<string, number>> {
  const { status, text } = await request(`${httpUrl}/metrics`, {}, timeoutMs);
  if (status !== 200) throw new Error(`/metrics answered ${status}`);
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^(hotkey_[a-z_]+)(?:\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
    if (m) out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
  }
  return out;
}
