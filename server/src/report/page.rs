//! The report's HTML: the summary and tables written here, the charts drawn in the page by
//! plotly.js from the report's data.

use std::fmt::Write;

use html_escape::encode_text as text;

use super::{BestConfiguration, TuningReport};

/// Rows of the configurations table; the rest are counted.
const TABLE_ROWS: usize = 50;

/// The whole page.
pub fn html(report: &TuningReport) -> String {
    let mut out = String::new();
    let title = format!("{} — cutune tuning report", report.kernel);
    let _ = write!(out, "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n", text(&title));
    let _ = writeln!(out, "{}\n</head>\n<body>", plotly_script());
    header(&mut out, report);
    summary(&mut out, report);
    let _ = writeln!(out, "<section><h2>Best time so far</h2><div id=\"progress\" class=\"chart\"></div></section>");
    if !report.params.is_empty() {
        let _ = writeln!(out, "<section><h2>Parameters against time</h2><p class=\"note\">Each line is a correct configuration, coloured by its time; drag along an axis to pick a range.</p><div id=\"parameters\" class=\"chart\"></div></section>");
    }
    verification(&mut out, report.best.as_ref(), report.replay_of.is_some());
    table(&mut out, report);
    let data = serde_json::to_string(report).unwrap_or_else(|_| "{}".into());
    // `</` would end the script element early; JSON reads `<\/` as the same text.
    let _ = writeln!(out, "<script id=\"cutune-data\" type=\"application/json\">{}</script>", data.replace("</", "<\\/"));
    let _ = writeln!(out, "<script>{DRAW}</script>\n</body>\n</html>");
    out
}

/// plotly.js as the `plotly` crate embeds it. The crate's offline sources are plotly.js followed
/// by MathJax, which these charts never use: only the first script is kept.
fn plotly_script() -> String {
    let sources = plotly::Plot::offline_js_sources();
    match sources.find("</script>") {
        Some(end) => sources[..end + "</script>".len()].trim().to_string(),
        None => sources,
    }
}

fn header(out: &mut String, report: &TuningReport) {
    let _ = writeln!(out, "<header><h1><code>{}</code></h1>", text(&report.kernel));
    let measured = match &report.replay_of {
        Some(from) => format!("a replay of {}", text(from)),
        None => text(&report.device).into_owned(),
    };
    let stop = report.stop_reason.as_deref().map_or_else(|| "did not finish".to_string(), |r| format!("stopped: {}", text(r)));
    let _ = writeln!(
        out,
        "<p class=\"where\">{} · {measured} · {} · {} · budget {} · {stop}</p></header>",
        text(&report.file),
        text(&report.date),
        text(&report.strategy),
        text(&report.budget)
    );
    if report.stale {
        let _ = writeln!(out, "<p class=\"stale\">The kernel changed since this run: these are the results of an earlier version of it. Tune it again to refresh them.</p>");
    }
}

fn summary(out: &mut String, report: &TuningReport) {
    let best = report.best.as_ref();
    let verified = match best.map(|b| (b.verified, b.verification_summary.as_deref().unwrap_or_default())) {
        _ if report.replay_of.is_some() => "as recorded".to_string(),
        Some((Some(true), summary)) => format!("✓ <small>{}</small>", text(summary)),
        Some((Some(false), summary)) => format!("✗ <small>{}</small>", text(summary)),
        Some((None, _)) => "✓? <small>on the spec's shapes</small>".to_string(),
        None => "—".to_string(),
    };
    let correct = report.evaluations.iter().filter(|e| e.correct).count();
    let cards = [
        ("original", micros(report.baseline_us)),
        ("best", micros(best.map(|b| b.row.time_us))),
        ("speedup", best.and_then(|b| b.row.speedup).map_or_else(|| "—".into(), |s| format!("{s:.2}×"))),
        ("speed of light", match (report.bound_us, best.and_then(|b| b.row.sol_percent)) {
            (Some(bound), Some(percent)) => format!("{percent:.0}% <small>of {bound:.2} µs</small>"),
            (Some(bound), None) => format!("{bound:.2} µs"),
            _ => "—".into(),
        }),
        ("verified", verified),
        ("evaluations", format!("{} <small>({correct} correct)</small>", report.evaluations.len())),
    ];
    let _ = writeln!(out, "<section class=\"cards\">");
    for (label, value) in cards {
        let _ = writeln!(out, "<div class=\"card\"><div class=\"label\">{label}</div><div class=\"value\">{value}</div></div>");
    }
    if let Some(best) = best {
        let _ = writeln!(out, "<p class=\"best\">Best configuration: <code>{}</code></p>", text(&best.row.configuration));
    }
    let _ = writeln!(out, "</section>");
}

fn verification(out: &mut String, best: Option<&BestConfiguration>, replay: bool) {
    let Some(best) = best else { return };
    let _ = writeln!(out, "<section><h2>Verification of <code>{}</code></h2>", text(&best.row.configuration));
    if best.stages.is_empty() {
        let why = if replay {
            "A replay repeats its recording's verdicts; it runs nothing to verify."
        } else {
            "It matched the original kernel on the spec's shapes; the five verification stages have not run (<code>cutune verify</code>, or <em>Verify kernel</em> in the editor)."
        };
        let _ = writeln!(out, "<p class=\"note\">{why}</p></section>");
        return;
    }
    let _ = writeln!(out, "<table class=\"stages\"><thead><tr><th>stage</th><th>passed</th><th>failed</th><th>largest relative error</th><th>notes</th></tr></thead><tbody>");
    for stage in &best.stages {
        let mark = match (stage.failed, stage.passed, stage.covered_by) {
            (0, 0, None) => "·",
            (0, _, _) => "✓",
            _ => "✗",
        };
        let mut notes: Vec<String> = stage.failure.iter().map(|f| text(f).into_owned()).collect();
        if stage.baseline_failed > 0 {
            notes.push(format!("the original failed {} case{}", stage.baseline_failed, if stage.baseline_failed == 1 { "" } else { "s" }));
        }
        notes.extend(stage.skipped.iter().map(|s| format!("skipped {}", text(s))));
        let error = stage.max_rel_error.map_or_else(|| "—".into(), |e| format!("{e:.2e}"));
        let _ = writeln!(
            out,
            "<tr class=\"{}\"><td>{mark} {}. {}</td><td>{}</td><td>{}</td><td>{error}</td><td>{}</td></tr>",
            if stage.failed > 0 { "fail" } else { "pass" },
            stage.number,
            stage.name,
            stage.passed,
            stage.failed,
            notes.join("; ")
        );
    }
    let _ = writeln!(out, "</tbody></table></section>");
}

fn table(out: &mut String, report: &TuningReport) {
    let _ = writeln!(out, "<section><h2>Configurations, fastest first</h2>");
    if report.table.is_empty() {
        let _ = writeln!(out, "<p class=\"note\">No configuration ran.</p></section>");
        return;
    }
    let _ = writeln!(out, "<table class=\"configurations\"><thead><tr><th>configuration</th><th>time</th><th>speedup</th><th>%SOL</th><th>registers</th><th>occupancy</th><th>status</th></tr></thead><tbody>");
    for row in report.table.iter().take(TABLE_ROWS) {
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{:.2} µs</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            text(&row.configuration),
            row.time_us,
            row.speedup.map_or_else(|| "—".into(), |s| format!("{s:.2}×")),
            row.sol_percent.map_or_else(|| "—".into(), |p| format!("{p:.0}%")),
            row.registers.map_or_else(|| "—".into(), |r| r.to_string()),
            row.occupancy.map_or_else(|| "—".into(), |o| format!("{:.0}%", o * 100.0)),
            text(&row.status)
        );
    }
    let _ = writeln!(out, "</tbody></table>");
    let more = report.table.len().saturating_sub(TABLE_ROWS);
    if more > 0 {
        let _ = writeln!(out, "<p class=\"note\">and {more} more (all of them: <code>cutune tune … --json</code>, or the results database)</p>");
    }
    let _ = writeln!(out, "</section>");
}

fn micros(value: Option<f64>) -> String {
    value.map_or_else(|| "—".into(), |v| format!("{v:.2} µs"))
}

/// Colours follow an editor's theme when the page is in a VS Code webview, else light defaults.
const STYLE: &str = r#"
body { font-family: var(--vscode-font-family, system-ui, sans-serif); color: var(--vscode-foreground, #1f2328);
       background: var(--vscode-editor-background, #ffffff); margin: 1.5rem auto; max-width: 72rem; padding: 0 1rem; }
h1 { margin-bottom: 0.2rem; font-size: 1.6rem; }
h2 { font-size: 1.15rem; margin-top: 2rem; }
.where, .note { color: var(--vscode-descriptionForeground, #59636e); }
.cards { display: flex; flex-wrap: wrap; gap: 0.75rem; }
.card { border: 1px solid var(--vscode-panel-border, #d1d9e0); border-radius: 6px; padding: 0.6rem 0.9rem; min-width: 8rem; }
.card .label { font-size: 0.8rem; color: var(--vscode-descriptionForeground, #59636e); }
.card .value { font-size: 1.3rem; margin-top: 0.2rem; }
.best { width: 100%; margin: 0.3rem 0 0; }
.chart { width: 100%; height: 24rem; }
table { border-collapse: collapse; width: 100%; font-size: 0.9rem; }
th, td { text-align: left; padding: 0.3rem 0.6rem; border-bottom: 1px solid var(--vscode-panel-border, #d1d9e0); }
td { white-space: nowrap; }
td:first-child, td:last-child { white-space: normal; }
tr.fail td, .stale { color: var(--vscode-errorForeground, #cf222e); }
code { font-family: var(--vscode-editor-font-family, ui-monospace, monospace); }
"#;

/// Draws the two charts from the page's data; marks the body `data-drawn` when done, so a test
/// (or a person's script) can wait for it.
const DRAW: &str = r##"
(function () {
  const report = JSON.parse(document.getElementById("cutune-data").textContent);
  const ink = getComputedStyle(document.body).color;
  const grid = "rgba(128, 128, 128, 0.25)";
  const layout = (extra) => Object.assign({
    paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", font: { color: ink },
    margin: { t: 20, r: 30, b: 50, l: 70 }, legend: { orientation: "h", y: -0.2 },
  }, extra);
  const config = { displaylogo: false, responsive: true };
  const ran = report.evaluations.filter((e) => e.time_us !== null);
  const correct = ran.filter((e) => e.correct);
  const wrong = ran.filter((e) => !e.correct);
  const times = ran.map((e) => e.time_us).concat([report.baseline_us, report.bound_us].filter((t) => t !== null));
  const spread = times.length ? Math.max(...times) / Math.max(Math.min(...times), 1e-9) : 1;
  const line = (y, colour, label) => ({
    shape: { type: "line", xref: "paper", x0: 0, x1: 1, y0: y, y1: y, line: { color: colour, dash: "dash", width: 2 } },
    note: { xref: "paper", x: 1, y: y, text: label, showarrow: false, xanchor: "right", yanchor: "bottom", font: { color: colour } },
  });
  const lines = [];
  if (report.baseline_us !== null) lines.push(line(report.baseline_us, "#8250df", "original " + report.baseline_us.toFixed(2) + " µs"));
  if (report.bound_us !== null) lines.push(line(report.bound_us, "#1a7f37", "speed of light " + report.bound_us.toFixed(2) + " µs"));
  const traces = [
    { x: correct.map((e) => e.number), y: correct.map((e) => e.time_us), text: correct.map((e) => e.configuration),
      mode: "markers", type: "scatter", name: "correct", marker: { color: "#6e7781", size: 6 },
      hovertemplate: "%{text}<br>%{y:.2f} µs<extra>#%{x}</extra>" },
    { x: report.evaluations.map((e) => e.number), y: report.evaluations.map((e) => e.best_so_far_us),
      mode: "lines", type: "scatter", name: "best so far", line: { shape: "hv", width: 3, color: "#0969da" }, hoverinfo: "skip" },
  ];
  if (wrong.length) {
    traces.splice(1, 0, { x: wrong.map((e) => e.number), y: wrong.map((e) => e.time_us), text: wrong.map((e) => e.configuration + "<br>" + e.status),
      mode: "markers", type: "scatter", name: "wrong output", marker: { color: "#cf222e", symbol: "x", size: 8 },
      hovertemplate: "%{text}<br>%{y:.2f} µs<extra>#%{x}</extra>" });
  }
  const drawn = [Plotly.newPlot("progress", traces, layout({
    xaxis: { title: { text: "evaluation" }, gridcolor: grid, zeroline: false },
    yaxis: { title: { text: "time (µs, sum over the shapes)" }, gridcolor: grid, type: spread > 20 ? "log" : "linear" },
    shapes: lines.map((l) => l.shape), annotations: lines.map((l) => l.note),
  }), config)];
  if (report.params.length && correct.length) {
    // A few distinct values (powers of two, mostly) are spaced evenly, in their order.
    const axis = (label, values) => {
      const ticks = [...new Set(values)].sort((a, b) => a - b);
      if (ticks.length > 12) return { label, values };
      return { label, values: values.map((v) => ticks.indexOf(v)), tickvals: ticks.map((_, i) => i), ticktext: ticks.map(String), range: [0, Math.max(ticks.length - 1, 1)] };
    };
    const dimensions = report.params.map((p, i) => axis(p, correct.map((e) => e.values[i])));
    dimensions.push({ label: "time (µs)", values: correct.map((e) => e.time_us) });
    drawn.push(Plotly.newPlot("parameters", [{
      type: "parcoords", dimensions, labelfont: { color: ink }, tickfont: { color: ink },
      line: { color: correct.map((e) => e.time_us), colorscale: "Viridis", reversescale: true, showscale: true, colorbar: { title: { text: "µs" } } },
    }], layout({ margin: { t: 50, r: 80, b: 30, l: 70 } }), config));
  }
  Promise.all(drawn).then(() => { document.body.dataset.drawn = "true"; });
})();
"##;
