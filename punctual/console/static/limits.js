// Target limits (docs/api.md "Target limits"): the caller's limits with their current use (GET
// /v1/limits), one limit's slots and the runs waiting on it, refreshed every 2 s while open (a burst
// is watched there), the editor (POST /v1/limits, PUT /v1/limits/{name}) and delete (DELETE).
import { useEffect, useState } from "preact/hooks";
import {
  ApiError, Confirm, FieldError, Time, api, enc, errorsFrom, fieldId, fieldProps, html, millis, useInterval,
} from "./lib.js";

const REFRESH_MS = 2000;

/** "job:<job_id>" is a job's own max_concurrent; anything else names a limit. */
export function LimitLink({ name }) {
  if (!name) return null;
  if (name.startsWith("job:")) return html`<span class="limit-name">this job's max_concurrent</span>`;
  return html`<a class="limit-name" href=${`#/limits/${enc(name)}`}>${name}</a>`;
}

/** In use of max_concurrent, with a bar ("7 / 10"); just the count when the limit has no cap. */
export function UseBar({ limit }) {
  if (!limit.max_concurrent) return html`<span class="use">${limit.in_use} in use</span>`;
  const share = Math.min(1, limit.in_use / limit.max_concurrent);
  return html`<span class="use"><span class="use-text">${limit.in_use} / ${limit.max_concurrent}</span>
    <span class=${share >= 1 ? "bar full" : "bar"} role="meter" aria-valuemin="0" aria-valuemax=${limit.max_concurrent}
      aria-valuenow=${limit.in_use} aria-label="slots in use"><span style=${{ width: `${share * 100}%` }}></span></span></span>`;
}

function rate(limit) {
  if (limit.per_second === null || limit.per_second === undefined) return html`<span class="none">–</span>`;
  const burst = limit.burst ?? Math.ceil(limit.per_second);
  return html`${limit.per_second}/s <span class="muted small">(burst ${burst}${limit.tokens !== null && limit.tokens !== undefined
    ? `, ${limit.tokens} tokens` : ""})</span>`;
}

/** Refreshes `load` every REFRESH_MS while the tab is visible. */
function useLive(load) {
  const [visible, setVisible] = useState(!document.hidden);
  useEffect(() => {
    const changed = () => setVisible(!document.hidden);
    document.addEventListener("visibilitychange", changed);
    return () => document.removeEventListener("visibilitychange", changed);
  }, []);
  useInterval(load, REFRESH_MS, visible);
}

// ------------------------------------------------------------------------------------ the list

export function LimitsList() {
  const [page, setPage] = useState(null);
  const [error, setError] = useState(null);
  const load = () => api("GET", "/v1/limits").then((answer) => { setPage(answer); setError(null); }, setError);
  useEffect(() => {
    load();
  }, []);
  useLive(load);
  return html`<section aria-labelledby="limits-title">
    <div class="title-row">
      <h2 id="limits-title">Limits</h2>
      <a class="button primary" href="#/new-limit" id="new-limit">New limit</a>
    </div>
    <p class="muted">Target limits: how many calls to a target are in flight at once and how many start per
      second, across all your jobs. A run over a limit waits its turn (<i>queued, limited</i>); it is never dropped.</p>
    ${error ? html`<p class="field-error" role="alert">${error.message}</p>` : null}
    ${page === null ? (error ? null : html`<p class="muted">Loading…</p>`) : html`<div class="table-wrap">
      <table id="limits-table">
        <caption class="visually-hidden">Your limits, by name, with their use now</caption>
        <thead><tr><th scope="col">Name</th><th scope="col">Matches</th><th scope="col">In use / max concurrent</th>
          <th scope="col">Per second</th><th scope="col">Waiting</th><th scope="col">Version</th></tr></thead>
        <tbody>
          ${page.items.length === 0 ? html`<tr><td colspan="6" class="muted">No limits yet: create one.</td></tr>` : null}
          ${page.items.map((limit) => html`<tr key=${limit.name} data-limit=${limit.name}>
            <td><a href=${`#/limits/${enc(limit.name)}`} class="limit-link">${limit.name}</a></td>
            <td class="mono match">${limit.match}</td>
            <td class="use-cell"><${UseBar} limit=${limit} /></td>
            <td>${rate(limit)}</td>
            <td class="waiting">${limit.waiting_count}</td>
            <td>${limit.version}</td>
          </tr>`)}
        </tbody>
      </table></div>`}
  </section>`;
}

// ----------------------------------------------------------------------------------- one limit

const runLink = (jobId, runId) => (jobId
  ? html`<a class="mono run-link" href=${`#/jobs/${enc(jobId)}/runs/${enc(runId)}`} title="the run, on its job's page">${runId}</a>`
  : html`<span class="mono">${runId}</span>`);
const jobLink = (jobId) => (jobId ? html`<a class="mono" href=${`#/jobs/${enc(jobId)}`}>${jobId}</a>` : html`<span class="none">–</span>`);

export function LimitView({ name, notify }) {
  const [limit, setLimit] = useState(null);
  const [error, setError] = useState(null);
  const [gone, setGone] = useState(false);
  const load = () => api("GET", `/v1/limits/${enc(name)}`).then((answer) => { setLimit(answer); setError(null); }, setError);
  useEffect(() => {
    load();
  }, [name]);
  useLive(() => !gone && load());

  const remove = async () => {
    try {
      setGone(true);
      await api("DELETE", `/v1/limits/${enc(name)}`);
      notify(`Limit ${name} deleted: the runs waiting on it start within seconds.`);
      location.hash = "#/limits";
    } catch (failure) {
      setGone(false);
      notify(failure.message, true);
    }
  };

  if (error && !limit) return html`<p class="field-error" role="alert">${error.message}</p>`;
  if (!limit) return html`<p class="muted">Loading…</p>`;
  return html`<article aria-labelledby="limit-title">
    <div class="title-row">
      <h2 id="limit-title">${limit.name}</h2>
      <span class="muted">limit, version ${limit.version}</span>
    </div>
    <div class="buttons job-actions" role="toolbar" aria-label="Limit actions">
      <a class="button" href=${`#/limits/${enc(limit.name)}/edit`} id="edit-limit">Edit</a>
      <${Confirm} id="delete-limit" label="Delete limit" question="Delete this limit? The runs waiting on it start at once."
        confirmLabel="Yes, delete it" onConfirm=${remove} />
      <a href="#/limits">All limits</a>
    </div>
    ${error ? html`<p class="field-error" role="alert">${error.message}</p>` : null}
    <dl class="definition" id="limit-rules">
      <dt>Matches</dt><dd class="mono">${limit.match}</dd>
      <dt>Max concurrent</dt><dd>${limit.max_concurrent ?? "no cap"}</dd>
      <dt>Per second</dt><dd>${rate(limit)}</dd>
      <dt>Updated</dt><dd><${Time} iso=${limit.updated_at} /></dd>
    </dl>
    <p class="limit-now" id="limit-now"><span class="now-label">Now:</span> <${UseBar} limit=${limit} />${" · "}<span id="limit-waiting-count">${limit.waiting_count} waiting</span></p>
    <div class="limit-tables">
      <section aria-labelledby="slots-title">
        <h3 id="slots-title">Slots held (${limit.in_use})</h3>
        <div class="table-wrap"><table id="slots-table">
          <caption class="visually-hidden">The runs holding a slot now</caption>
          <thead><tr><th scope="col">Job</th><th scope="col">Run</th><th scope="col">Since</th><th scope="col">Lease until</th></tr></thead>
          <tbody>
            ${limit.running.length === 0 ? html`<tr><td colspan="4" class="muted">No slot is held.</td></tr>` : null}
            ${limit.running.map((slot) => html`<tr key=${slot.run_id} class="slot-row" data-run-id=${slot.run_id}>
              <td>${jobLink(slot.job_id)}</td><td>${runLink(slot.job_id, slot.run_id)}</td>
              <td><${Time} iso=${slot.taken_at} ms=${true} /></td><td><${Time} iso=${slot.lease_until} /></td>
            </tr>`)}
          </tbody></table></div>
      </section>
      <section aria-labelledby="waiting-title">
        <h3 id="waiting-title">Runs waiting (${limit.waiting_count})</h3>
        <div class="table-wrap"><table id="waiting-table">
          <caption class="visually-hidden">The runs waiting on the limit, longest waiting first</caption>
          <thead><tr><th scope="col">Job</th><th scope="col">Run</th><th scope="col">Waiting since</th><th scope="col">Waited</th></tr></thead>
          <tbody>
            ${limit.waiting.length === 0 ? html`<tr><td colspan="4" class="muted">No run is waiting.</td></tr>` : null}
            ${limit.waiting.map((waiter) => html`<tr key=${waiter.run_id} class="waiter-row" data-run-id=${waiter.run_id}>
              <td>${jobLink(waiter.job_id)}</td><td>${runLink(waiter.job_id, waiter.run_id)}</td>
              <td><${Time} iso=${waiter.since} ms=${true} /></td><td>${millis(waiter.waited_ms)}</td>
            </tr>`)}
          </tbody></table></div>
        ${limit.waiting_count > limit.waiting.length
          ? html`<p class="muted">and ${limit.waiting_count - limit.waiting.length} more</p>` : null}
      </section>
    </div>
  </article>`;
}

// ---------------------------------------------------------------------------------- the editor

const LIMIT_FIELDS = ["name", "match", "max_concurrent", "per_second", "burst", "version"];
const text = (value) => (value === null || value === undefined ? "" : String(value));
// A number as typed; anything else goes to the API as text, which names the field and says why.
const number = (value) => (value.trim() !== "" && Number.isFinite(Number(value)) ? Number(value) : value.trim());

export function LimitEditor({ name, notify }) {
  const editing = Boolean(name);
  const [limit, setLimit] = useState(editing ? null : undefined);
  const [loadError, setLoadError] = useState(null);
  useEffect(() => {
    if (editing) api("GET", `/v1/limits/${enc(name)}`).then(setLimit, setLoadError);
  }, [name]);
  if (loadError) return html`<p class="field-error" role="alert">${loadError.message}</p>`;
  if (limit === null) return html`<p class="muted">Loading…</p>`;
  return html`<${LimitForm} key=${name || ""} limit=${limit} notify=${notify} />`;
}

function LimitForm({ limit, notify }) {
  const editing = Boolean(limit);
  const [state, setState] = useState(() => ({
    name: editing ? limit.name : "",
    match: editing ? limit.match : "",
    max_concurrent: editing ? text(limit.max_concurrent) : "",
    per_second: editing ? text(limit.per_second) : "",
    burst: editing ? text(limit.burst) : "",
  }));
  const [errors, setErrors] = useState({});
  const [busy, setBusy] = useState(false);

  async function submit(event) {
    event.preventDefault();
    setErrors({});
    const body = { match: state.match.trim() };
    for (const field of ["max_concurrent", "per_second", "burst"]) {
      if (state[field].trim()) body[field] = number(state[field]);
    }
    setBusy(true);
    try {
      const answer = editing
        ? await api("PUT", `/v1/limits/${enc(limit.name)}`, { ...body, version: limit.version })
        : await api("POST", "/v1/limits", { name: state.name.trim(), ...body });
      notify(editing ? `Limit ${answer.name} saved (version ${answer.version}).` : `Limit ${answer.name} created.`);
      location.hash = `#/limits/${enc(answer.name)}`;
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      const found = errorsFrom(error, LIMIT_FIELDS);
      if (found.version) {
        found.form = `${found.version} (reload the page to edit the current version)`;
        delete found.version;
      }
      setErrors(found);
      const first = Object.keys(found).find((field) => field !== "form");
      const element = first && document.querySelector(`[data-field="${CSS.escape(first)}"]`);
      if (element) element.focus();
    } finally {
      setBusy(false);
    }
  }

  const input = (field, extra = {}) => html`<input ...${fieldProps(field, errors)} value=${state[field]}
    onInput=${(event) => { const value = event.currentTarget.value; setState((old) => ({ ...old, [field]: value })); }}
    autocomplete="off" spellcheck=${false} ...${extra} />`;
  const field = (name, label, hint, extra) => html`<div class="field"><label for=${fieldId(name)}>${label}</label>
    ${input(name, extra)}${hint ? html`<p class="hint">${hint}</p>` : null}<${FieldError} errors=${errors} field=${name} /></div>`;
  return html`<form class="limit-form" onSubmit=${submit} novalidate aria-label=${editing ? "Change the limit" : "Create a limit"}>
    <h2>${editing ? `Change limit ${limit.name}` : "Create a limit"}</h2>
    ${errors.form ? html`<p class="field-error" id="err-form" role="alert">${errors.form}</p>` : null}
    <fieldset>
      <legend>Limit</legend>
      ${editing ? null : field("name", "Name", "Unique among your limits: letters, digits and ._-")}
      ${field("match", "Matches (URL prefix or ARN)",
        "https://api.partner.test/v1 covers …/v1 and …/v1/orders, not …/v10; an ARN covers itself and its qualifiers, or ends in * for a prefix",
        { placeholder: "https://api.partner.test/v1" })}
      <div class="triple">
        ${field("max_concurrent", "Max concurrent (optional)", "1 to 1,000 calls in flight at once", { inputmode: "numeric" })}
        ${field("per_second", "Per second (optional)", "calls started per second", { inputmode: "decimal" })}
        ${field("burst", "Burst (optional)", "with per second: the bucket's size", { inputmode: "numeric" })}
      </div>
      <p class="hint">Set max concurrent, per second or both. A change reaches every worker within 10 s.</p>
    </fieldset>
    <div class="actions">
      <button type="submit" class="primary" id="save-limit" disabled=${busy}>${editing ? "Save changes" : "Create limit"}</button>
      <a class="button" href=${editing ? `#/limits/${enc(limit.name)}` : "#/limits"}>Cancel</a>
    </div>
  </form>`;
}

// ------------------------------------------------------------------------- a run and its limits

const WAITING = ["QUEUED", "RETRYING"];

/**
 * What a target limit did to a run (the job page's history and run detail): "waiting for limit
 * partner since …" while it waits (reason `limited`), "waited 1.20 s for partner" once an attempt
 * started after a wait (`limited_ms`); nothing for a run no limit held back.
 */
export function LimitWait({ run }) {
  if (!run || !run.limited_by) return null;
  const own = run.limited_by.startsWith("job:");
  const what = own ? html`<span class="limit-name">the job's max_concurrent</span>` : html`limit <${LimitLink} name=${run.limited_by} />`;
  if (run.reason === "limited" && WAITING.includes(run.status)) {
    return html`<span class="limited limit-wait">waiting for ${what}${run.limited_since
      ? html` since <${Time} iso=${run.limited_since} ms=${true} />` : null}</span>`;
  }
  if (run.limited_ms !== null && run.limited_ms !== undefined) {
    return html`<span class="limit-waited">waited ${millis(run.limited_ms)} for ${own ? what : html`<${LimitLink} name=${run.limited_by} />`}</span>`;
  }
  return null;
}
