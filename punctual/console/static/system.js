// The system view: GET /v1/stats every few seconds, and a plot of the samples this page has taken
// (the API keeps no history of them; reloading the page starts afresh).
import { useEffect, useState } from "preact/hooks";
import { Status, api, html, useInterval } from "./lib.js";
import { Plot } from "./plot.js";

const KEEP = 360; // samples: half an hour at one every 5 s
const history = { times: [], queued: [], delayed: [], inFlight: [], dlq: [], lag: [] };

function remember(stats) {
  const queue = stats.queue || {};
  history.times.push(Date.now() / 1000);
  history.queued.push(queue.queued ?? null);
  history.delayed.push(queue.delayed ?? null);
  history.inFlight.push(queue.in_flight ?? null);
  history.dlq.push(queue.dlq ?? null);
  history.lag.push(stats.dispatcher_lag_seconds ?? null);
  for (const series of Object.values(history)) if (series.length > KEEP) series.shift();
}

export function SystemView() {
  const [stats, setStats] = useState(null);
  const [error, setError] = useState(null);
  const [samples, setSamples] = useState(history.times.length);

  async function load() {
    try {
      const answer = await api("GET", "/v1/stats");
      remember(answer);
      setStats(answer);
      setSamples(history.times.length);
      setError(null);
    } catch (failure) {
      setError(failure);
    }
  }
  useEffect(() => {
    load();
  }, []);
  useInterval(load, 5000);

  const queueData = [history.times, history.queued, history.delayed, history.inFlight, history.dlq].map((s) => [...s]);
  const lagData = [[...history.times], [...history.lag]];
  return html`<section aria-labelledby="system-title">
    <h2 id="system-title">System</h2>
    <p class="muted">GET /v1/stats, every 5 s; the plots show what this page has seen (${samples} sample(s)).</p>
    ${error ? html`<p class="field-error" role="alert">${error.message}</p>` : null}
    ${stats ? html`<div class="cards" id="stats">
      <div class="card"><h3>Your jobs</h3><ul class="counts">${Object.entries(stats.jobs).sort()
        .map(([k, v]) => html`<li><${Status} value=${k} /> <b>${v}</b></li>`)}</ul></div>
      <div class="card"><h3>Your finished runs</h3><ul class="counts">${Object.entries(stats.runs).sort()
        .map(([k, v]) => html`<li><${Status} value=${k} /> <b>${v}</b></li>`)}</ul></div>
      <div class="card"><h3>Work queue</h3><dl class="definition">
        <dt>queued</dt><dd id="stat-queued">${stats.queue.queued}</dd>
        <dt>delayed (waiting for their second)</dt><dd>${stats.queue.delayed}</dd>
        <dt>in flight</dt><dd>${stats.queue.in_flight}</dd>
        <dt>dead-letter queue</dt><dd id="stat-dlq">${stats.queue.dlq}</dd></dl></div>
      <div class="card"><h3>Dispatcher lag</h3><p class="big" id="stat-lag">${stats.dispatcher_lag_seconds === null
        ? "–" : `${Math.round(stats.dispatcher_lag_seconds)} s`}</p>
        <p class="hint">Now minus the oldest minute not yet swept; up to a tick plus a minute is normal.</p></div>
    </div>` : null}
    ${samples > 1 ? html`<div class="columns">
      <div><h3>Queue</h3><${Plot} data=${queueData} series=${["queued", "delayed", "in flight", "DLQ"]}
        label="Work queue depth, delayed, in-flight and dead-letter messages over the samples this page took" /></div>
      <div><h3>Dispatcher lag</h3><${Plot} data=${lagData} series=${["lag s"]} units=" s"
        label="Dispatcher lag in seconds over the samples this page took" /></div>
    </div>` : null}
  </section>`;
}
