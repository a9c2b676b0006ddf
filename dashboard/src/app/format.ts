/** How numbers and times read on the page: short, fixed-width-friendly, locale-free. */

export function formatQps(qps: number): string {
  if (qps >= 1e6) return `${(qps / 1e6).toFixed(2)}M`;
  if (qps >= 1e4) return `${(qps / 1e3).toFixed(1)}k`;
  if (qps >= 100) return Math.round(qps).toString();
  return qps.toFixed(1);
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1 << 30) return `${(bytes / (1 << 30)).toFixed(2)} GiB`;
  if (bytes >= 1 << 20) return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
  if (bytes >= 1 << 10) return `${(bytes / (1 << 10)).toFixed(0)} KiB`;
  return `${bytes} B`;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

export function formatAgo(at: number, now: number): string {
  return at <= 0 ? '—' : `${formatDuration(now - at)} ago`;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** Local wall-clock time with milliseconds: events a few ms apart must read apart. */
export function formatClock(at: number): string {
  const d = new Date(at);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

export function formatDateTime(at: number): string {
  const d = new Date(at);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
