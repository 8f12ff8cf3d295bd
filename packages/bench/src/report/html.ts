import { renderChart } from './chart';
import type { ReportModel } from './model';
import { alertTable, configTable, stageTable } from './tables';
import { escapeXml } from './xml';

const CSS = `
body{font-family:"DejaVu Sans",Verdana,Helvetica,Arial,sans-serif;color:#202124;margin:24px;background:#fff}
h1{font-size:20px;margin:0 0 4px}
h2{font-size:16px;margin:28px 0 8px}
.sub{color:#5f6368;margin:0 0 16px;font-size:13px}
figure{margin:0;position:relative;overflow-x:auto}
figure svg{display:block;max-width:none}
table{border-collapse:collapse;margin:8px 0 16px;font-size:12px}
caption{text-align:left;font-weight:bold;padding:4px 0;font-size:13px}
th,td{border:1px solid #dadce0;padding:3px 8px;text-align:right;white-space:nowrap}
th{background:#f1f3f4}
td:first-child,th:first-child{text-align:left}
table[data-table=config] td:last-child,table[data-table=alerts] td:last-child{text-align:left;white-space:normal}
.statement{font-size:13px;color:#3c4043}
.note{font-size:12px;color:#5f6368}
#tip{position:absolute;pointer-events:none;background:rgba(255,255,255,.96);border:1px solid #bdc1c6;border-radius:4px;padding:6px 8px;font-size:11px;line-height:1.4;display:none;white-space:pre;box-shadow:0 1px 3px rgba(0,0,0,.15)}
`;

/**
 * Hover: a cursor line across every panel and the numbers of the second
 * under the pointer. Reads the data embedded in the page; fetches nothing.
 */
const SCRIPT = `
(function () {
  var dataNode = document.getElementById('infersignal-data');
  var svg = document.querySelector('svg[data-chart]');
  var tip = document.getElementById('tip');
  if (!dataNode || !svg || !tip) return;
  var runs = JSON.parse(dataNode.textContent || '[]');
  var cursor = svg.querySelector('[data-role=cursor]');
  var left = Number(svg.getAttribute('data-plot-left'));
  var right = Number(svg.getAttribute('data-plot-right'));
  var top = Number(svg.getAttribute('data-plot-top'));
  var bottom = Number(svg.getAttribute('data-plot-bottom'));
  var domain = Number(svg.getAttribute('data-domain-seconds'));
  var names = ['ok', 'WARN', 'CRITICAL'];
  function describe(run, second) {
    var p = null;
    for (var i = 0; i < run.result.timeline.length; i++) if (run.result.timeline[i].second === second) p = run.result.timeline[i];
    var head = (runs.length > 1 ? run.id + ': ' : '');
    if (!p) return head + 'no data';
    var lines = [head + 'sent ' + p.offered + '/s, ok ' + p.achieved + '/s, errors ' + p.errors + ' (shed ' + p.shed + ')',
      '  P50 ' + p.p50.toFixed(1) + ' ms, P99 ' + p.p99.toFixed(1) + ' ms'];
    var levels = Object.keys(p.levels).filter(function (k) { return p.levels[k] > 0; });
    if (levels.length) lines.push('  ' + levels.map(function (k) { return k + ' ' + names[p.levels[k]]; }).join(', '));
    return lines.join('\\n');
  }
  svg.addEventListener('mousemove', function (event) {
    var m = svg.getScreenCTM();
    if (!m) return;
    var x = (event.clientX - m.e) / m.a;
    var y = (event.clientY - m.f) / m.d;
    if (x < left || x > right || y < top || y > bottom) { tip.style.display = 'none'; if (cursor) cursor.setAttribute('visibility', 'hidden'); return; }
    var second = Math.min(domain - 1, Math.floor(((x - left) / (right - left)) * domain));
    if (cursor) { cursor.setAttribute('x1', String(x)); cursor.setAttribute('x2', String(x)); cursor.setAttribute('visibility', 'visible'); }
    tip.textContent = 'second ' + second + '\\n' + runs.map(function (r) { return describe(r, second); }).join('\\n');
    tip.style.display = 'block';
    tip.style.left = (x + 14) + 'px';
    tip.style.top = (y + 14) + 'px';
  });
  svg.addEventListener('mouseleave', function () { tip.style.display = 'none'; if (cursor) cursor.setAttribute('visibility', 'hidden'); });
})();
`;

/** JSON inside a script element: `<` escaped so no `</script>` in the data can end it early. */
function inlineJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** One self-contained page: styles, script and the runs' data inline; no URL is ever fetched. */
export function renderHtml(model: ReportModel): string {
  const compare = model.runs.length > 1;
  const title = compare
    ? `InferSignal bench: ${model.runs.map((r) => r.label).join(' vs ')}`
    : `InferSignal bench: ${model.runs[0].result.target}`;
  const sections = model.runs
    .map((view) => {
      const prefix = compare ? `${view.id} (${view.label}): ` : '';
      return `<section data-run="${escapeXml(view.id)}">${compare ? `<h2>${escapeXml(`${view.id}: ${view.label}`)}</h2>` : ''}${stageTable(view, prefix)}${alertTable(view, prefix)}${configTable(view, prefix)}</section>`;
    })
    .join('');
  const started = model.runs
    .map((r) => `${compare ? `${r.id}: ` : ''}${r.result.target}, started ${r.result.startedAt}`)
    .join(' · ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<link rel="icon" href="data:,">
<title>${escapeXml(title)}</title>
<style>${CSS}</style>
</head>
<body>
<h1>${escapeXml(compare ? 'InferSignal bench: comparison' : 'InferSignal bench report')}</h1>
<p class="sub">${escapeXml(started)}</p>
<figure>${renderChart(model, { interactive: true })}<div id="tip"></div></figure>
<h2>Summary</h2>
${sections}
<p class="note">Written by @infersignal/bench. Everything on this page is in this file; it fetches nothing.</p>
<script type="application/json" id="infersignal-data">${inlineJson(model.runs.map((r) => ({ id: r.id, label: r.label, result: r.result })))}</script>
<script>${SCRIPT}</script>
</body>
</html>
`;
}
