/**
 * The fallback page served at `GET /` when the dashboard could not be built at start: polls
 * /api/hot every 500 ms and lists hot keys. A dashboard token, when the hub has one, is read from
 * the page's `#token=…` fragment (never sent in a URL to the server).
 */
export function fallbackPageHtml(hubId: string): string {
  const id = hubId.replace(/[<>&"']/g, '');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>hotkey hub ${id}</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 2em; color: #222 }
table { border-collapse: collapse; min-width: 40em }
th, td { text-align: left; padding: 4px 12px; border-bottom: 1px solid #ddd }
td.n { text-align: right; font-variant-numeric: tabular-nums }
#status { color: #888 }
</style>
</head>
<body>
<h1>hotkey hub <code>${id}</code></h1>
<p id="status">loading…</p>
<table>
<thead><tr><th>app</th><th>key</th><th>qps</th><th>threshold</th><th>instances</th><th>hot since</th><th>hub</th></tr></thead>
<tbody id="hot"></tbody>
</table>
<script>
const token = new URLSearchParams(location.hash.slice(1)).get('token');
const headers = token ? { authorization: 'Bearer ' + token } : {};
const body = document.getElementById('hot');
const status = document.getElementById('status');
function cell(text, cls) { const td = document.createElement('td'); td.textContent = text; if (cls) td.className = cls; return td; }
async function poll() {
  try {
    const res = await fetch('/api/hot', { headers, signal: AbortSignal.timeout(2000) });
    const data = await res.json();
    if (!res.ok) throw new Error(data.error ? data.error.message : res.statusText);
    body.replaceChildren(...data.hot.map((h) => {
      const tr = document.createElement('tr');
      tr.append(cell(h.app), cell(h.key), cell(Math.round(h.qps), 'n'), cell(h.threshold, 'n'), cell(h.instances, 'n'),
        cell(new Date(h.since).toLocaleTimeString()), cell(h.hub));
      return tr;
    }));
    status.textContent = data.hot.length + ' hot keys · ' + new Date().toLocaleTimeString();
  } catch (err) {
    status.textContent = 'error: ' + err.message;
  }
}
poll();
setInterval(poll, 500);
</script>
</body>
</html>
`;
}
