// The jobs list (GET /v1/jobs: newest first, status and name-prefix filters, cursor pages, live refresh) and
// bulk pause / resume / cancel by tag (POST /v1/jobs/bulk).
import { useEffect, useState } from "preact/hooks";
import {
  ApiError, Confirm, FieldError, JOB_STATUSES, Status, Time, api, errorsFrom, fieldProps, html, millis, query,
  scheduleWords, useInterval,
} from "./lib.js";

const PAGE = 20;

export function JobsList({ notify }) {
  const [status, setStatus] = useState("");
  const [name, setName] = useState("");
  const [appliedName, setAppliedName] = useState("");
  const [cursors, setCursors] = useState([null]); // the cursor of each page seen, for "previous"
  const [page, setPage] = useState(null);
  const [error, setError] = useState(null);
  const [live, setLive] = useState(true);
  const cursor = cursors[cursors.length - 1];

  async function load() {
    try {
      const answer = await api("GET", `/v1/jobs${query({ limit: PAGE, status, name_prefix: appliedName, cursor })}`);
      setPage(answer);
      setError(null);
    } catch (failure) {
      setError(failure instanceof ApiError ? failure : new ApiError(0, { reason: String(failure) }));
    }
  }
  useEffect(() => {
    load();
  }, [status, appliedName, cursor]);
  useInterval(load, 5000, live);

  const filter = (event) => {
    event.preventDefault();
    setAppliedName(name.trim());
    setCursors([null]);
  };

  return html`<section aria-labelledby="jobs-title">
    <div class="title-row">
      <h2 id="jobs-title">Jobs</h2>
      <a class="button primary" href="#/new" id="new-job">New job</a>
    </div>
    <form class="filters" onSubmit=${filter} role="search" aria-label="Filter jobs">
      <label>Status <select id="filter-status" value=${status}
        onChange=${(event) => { setStatus(event.currentTarget.value); setCursors([null]); }}>
        <option value="">any</option>
        ${JOB_STATUSES.map((value) => html`<option value=${value}>${value}</option>`)}
      </select></label>
      <label>Name <input id="filter-name" type="search" value=${name} placeholder="name starts with"
        onInput=${(event) => setName(event.currentTarget.value)} /></label>
      <button type="submit">Filter</button>
      <label class="check"><input type="checkbox" id="live-jobs" checked=${live}
        onChange=${(event) => setLive(event.currentTarget.checked)} /> live (every 5 s)</label>
    </form>
    ${error ? html`<p class="field-error" role="alert">${error.message}</p>` : null}
    ${page === null ? html`<p class="muted">Loading…</p>` : html`
      <div class="table-wrap">
        <table class="jobs" id="jobs-table">
          <caption class="visually-hidden">Your jobs, newest first</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Schedule</th>
            <th scope="col">Next run</th><th scope="col">Last run</th><th scope="col">Tags</th></tr></thead>
          <tbody>
            ${page.items.length === 0 ? html`<tr><td colspan="6" class="muted">No jobs${status || appliedName
              ? " match" : " yet: create one"}.</td></tr>` : null}
            ${page.items.map((job) => html`<tr key=${job.job_id}>
              <td><a href=${`#/jobs/${job.job_id}`} class="job-link">${job.name || html`<span class="mono">${job.job_id}</span>`}</a>
                ${job.name ? html`<div class="mono muted small">${job.job_id}</div>` : null}</td>
              <td><${Status} value=${job.status} /></td>
              <td>${scheduleWords(job.schedule)}</td>
              <td><${Time} iso=${job.next_run_at} rel=${true} /></td>
              <td>${job.last_run ? html`<${Status} value=${job.last_run.status} />
                ${job.last_run.lateness_ms === null ? null
                : html`<span class="small"> late ${millis(job.last_run.lateness_ms)}</span>`}` : html`<span class="none">–</span>`}</td>
              <td class="small">${Object.entries(job.tags || {}).map(([k, v]) => html`<span class="tag">${k}=${v}</span> `)}</td>
            </tr>`)}
          </tbody>
        </table>
      </div>
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled=${cursors.length === 1} onClick=${() => setCursors(cursors.slice(0, -1))}>Previous</button>
        <span class="muted">page ${cursors.length}</span>
        <button type="button" id="next-page" disabled=${!page.next_cursor}
          onClick=${() => setCursors([...cursors, page.next_cursor])}>Next</button>
      </nav>`}
    <${Bulk} notify=${notify} onDone=${load} />
  </section>`;
}

const BULK_FIELDS = ["tags", "action", "note", "until"];

function Bulk({ notify, onDone }) {
  const [tags, setTags] = useState("");
  const [action, setAction] = useState("pause");
  const [note, setNote] = useState("");
  const [until, setUntil] = useState("");
  const [errors, setErrors] = useState({});
  const [result, setResult] = useState(null);

  async function run() {
    setErrors({});
    const parsed = {};
    for (const item of tags.split(/[\n,]/)) {
      if (!item.trim()) continue;
      const at = item.indexOf("=");
      if (at <= 0) {
        setErrors({ tags: `"${item.trim()}" is not key=value` });
        return;
      }
      parsed[item.slice(0, at).trim()] = item.slice(at + 1).trim();
    }
    const body = { action, tags: parsed };
    if (action === "pause" && note.trim()) body.note = note.trim();
    if (action === "pause" && until.trim()) body.until = until.trim();
    try {
      const answer = await api("POST", "/v1/jobs/bulk", body);
      setResult(answer);
      notify(`${action}: ${answer.matched} job(s) matched${answer.more ? " (more remain: run it again)" : ""}.`);
      onDone();
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      setErrors(errorsFrom(error, BULK_FIELDS));
    }
  }
  const submit = (event) => {
    event.preventDefault();
    if (action !== "cancel") run();
  };

  return html`<details class="bulk">
    <summary>Pause, resume or cancel every job with some tags</summary>
    <form onSubmit=${submit} aria-label="Bulk action by tag">
      ${errors.form ? html`<p class="field-error" role="alert">${errors.form}</p>` : null}
      <div class="field"><label for="f-bulk-tags">Tags (key=value, comma-separated; a job must carry all)</label>
        <input ...${fieldProps("tags", errors)} id="f-bulk-tags" value=${tags} onInput=${(e) => setTags(e.currentTarget.value)} />
        <${FieldError} errors=${errors} field="tags" /></div>
      <div class="field"><label for="f-bulk-action">Action</label>
        <select id="f-bulk-action" value=${action} onChange=${(e) => setAction(e.currentTarget.value)}>
          <option value="pause">pause</option><option value="resume">resume</option><option value="cancel">cancel</option>
        </select><${FieldError} errors=${errors} field="action" /></div>
      ${action === "pause" ? html`<div class="pair">
        <div class="field"><label for="f-bulk-note">Note (optional)</label>
          <input ...${fieldProps("note", errors)} id="f-bulk-note" value=${note} onInput=${(e) => setNote(e.currentTarget.value)} />
          <${FieldError} errors=${errors} field="note" /></div>
        <div class="field"><label for="f-bulk-until">Until (optional, ISO 8601)</label>
          <input ...${fieldProps("until", errors)} id="f-bulk-until" value=${until} onInput=${(e) => setUntil(e.currentTarget.value)} />
          <${FieldError} errors=${errors} field="until" /></div></div>` : null}
      ${action === "cancel"
        ? html`<${Confirm} label="Cancel the matching jobs" question="Cancel every matching job? This cannot be undone."
            confirmLabel="Yes, cancel them" onConfirm=${run} />`
        : html`<button type="submit">${action === "pause" ? "Pause" : "Resume"} matching jobs</button>`}
    </form>
    ${result ? html`<table class="small"><caption>${result.action}: ${result.matched} matched${result.more ? ", more remain" : ""}</caption>
      <tbody>${result.items.map((item) => html`<tr><td><a href=${`#/jobs/${item.job_id}`} class="mono">${item.job_id}</a></td>
        <td>${item.status}</td><td>${item.error ? `${item.error.field || ""} ${item.error.reason || ""}` : item.job.status}</td></tr>`)}</tbody>
    </table>` : null}
  </details>`;
}
