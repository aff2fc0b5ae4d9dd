// One job: its definition, upcoming fire times, actions (edit, pause with a note, resume, run now,
// backfill, cancel), run history with the reasons of non-runs, a lateness and duration plot, one
// run's attempts (cancel a run that has not finished), and its audit trail (changes.js).
import { useEffect, useMemo, useState } from "preact/hooks";
import {
  ApiError, Confirm, FINISHED_RUN, FieldError, Json, RUN_STATUSES, Status, Time, api, enc, errorsFrom,
  fieldProps, html, millis, query, scheduleWords, useInterval,
} from "./lib.js";
import { Changes } from "./changes.js";
import { Alerts, JobForm, ON_EXCLUDED } from "./form.js";
import { LimitWait } from "./limits.js";
import { Plot } from "./plot.js";

const REASONS = ["paused", "misfire_skipped", "misfire_collapsed", "overlap", "superseded", "job_cancelled", "cancelled", "calendar", "limited"];
// The alert kinds a job's alerts tell of (AlertKind); limited: a run waited on a target limit.
export const ALERT_KINDS = ["failed", "late", "running_long", "missed", "limited"];
const LIVE = ["ACTIVE", "PAUSED"];

export function JobView({ jobId, editing, runId, notify }) {
  const [job, setJob] = useState(null);
  const [error, setError] = useState(null);
  const [runsVersion, setRunsVersion] = useState(0);

  async function load() {
    try {
      setJob(await api("GET", `/v1/jobs/${enc(jobId)}`));
      setError(null);
    } catch (failure) {
      setError(failure);
    }
  }
  useEffect(() => {
    setJob(null);
    load();
  }, [jobId]);
  useInterval(load, 3000, !editing);

  const act = async (label, method, path, body) => {
    try {
      const answer = await api(method, path, body);
      notify(label);
      await load();
      setRunsVersion((v) => v + 1);
      return answer;
    } catch (failure) {
      notify(failure.message, true);
      throw failure;
    }
  };

  if (error && !job) return html`<p class="field-error" role="alert">${error.message}</p>`;
  if (!job) return html`<p class="muted">Loading…</p>`;
  if (editing) {
    return html`<${JobForm} job=${job} notify=${notify}
      onDone=${(changed) => {
        if (changed) setJob(changed);
        location.hash = `#/jobs/${job.job_id}`;
      }} />`;
  }
  const live = LIVE.includes(job.status);
  return html`<article aria-labelledby="job-title">
    <div class="title-row">
      <h2 id="job-title">${job.name || html`<span class="mono">${job.job_id}</span>`}</h2>
      <${Status} value=${job.status} />
    </div>
    <p class="mono muted small">${job.job_id}</p>
    ${job.pause ? html`<p class="pause-note" id="pause-info">Paused <${Time} iso=${job.pause.at} /> by ${job.pause.by}
      ${job.pause.until ? html`, until <${Time} iso=${job.pause.until} />` : null}
      ${job.pause.note ? html`: <q>${job.pause.note}</q>` : null}</p>` : null}
    <${Actions} job=${job} act=${act} live=${live} />
    <${Runs} job=${job} version=${runsVersion} notify=${notify} runId=${runId} />
    <${Changes} job=${job} version=${runsVersion} notify=${notify}
      onRestored=${() => { load(); setRunsVersion((v) => v + 1); }} />
    <div class="columns">
      <section aria-labelledby="definition-title">
        <h3 id="definition-title">Definition</h3>
        <dl class="definition">
          <dt>Schedule</dt><dd>${scheduleWords(job.schedule)}</dd>
          <dt>Calendar</dt><dd id="job-calendar">${job.schedule.calendar ? html`<a href=${`#/calendars/${enc(job.schedule.calendar)}`}
            >${job.schedule.calendar}</a>; on an excluded day: ${(ON_EXCLUDED.find(([value]) => value === job.schedule.on_excluded)
              || [null, job.schedule.on_excluded])[1]}` : "none"}</dd>
          <dt>As stored</dt><dd><${Json} value=${job.schedule} /></dd>
          <dt>Target</dt><dd><${Json} value=${job.target} /></dd>
          <dt>Payload</dt><dd><${Json} value=${job.payload} /></dd>
          <dt>Retry</dt><dd>${job.retry.max_attempts} attempts, backoff ${job.retry.backoff_seconds} s (at most ${job.retry.max_backoff_seconds} s)</dd>
          <dt>Timeout</dt><dd>${job.timeout_seconds} s</dd>
          <dt>Jitter</dt><dd>${job.jitter_seconds ? `${job.jitter_seconds} s` : "none"}</dd>
          <dt>Pause after failures</dt><dd>${job.pause_on_failures ?? "never"}</dd>
          <dt>Failed runs to</dt><dd>${job.dead_letter ? job.dead_letter.queue_url : "no dead-letter queue"}</dd>
          <dt>Max concurrent</dt><dd id="job-max-concurrent">${job.max_concurrent
            ? `${job.max_concurrent} of its attempts at once` : "no cap of its own"}</dd>
          <dt>Run limit</dt><dd>${job.max_runs ? `${job.max_runs} runs, ${job.remaining_runs ?? "?"} to come` : "none"}</dd>
          <dt>Once ended</dt><dd>${job.on_complete === "delete"
            ? html`deleted after ${job.delete_after_days} days${job.deletes_at ? html` (<${Time} iso=${job.deletes_at} />)` : null}`
            : "kept"}</dd>
          <dt>Tags</dt><dd>${Object.keys(job.tags || {}).length
            ? Object.entries(job.tags).map(([k, v]) => html`<span class="tag">${k}=${v}</span> `) : "none"}</dd>
          <dt>Signed deliveries</dt><dd>${job.has_signing_secret ? "yes" : "no"}</dd>
          <dt>Runs</dt><dd>${Object.entries(job.run_counts || {}).map(([k, v]) => `${k} ${v}`).join(", ") || "none yet"}</dd>
          <dt>Version</dt><dd>${job.version}</dd>
          <dt>Created</dt><dd><${Time} iso=${job.created_at} /></dd>
          <dt>Updated</dt><dd><${Time} iso=${job.updated_at} /></dd>
        </dl>
        <${Alerts} job=${job} />
      </section>
      <section aria-labelledby="upcoming-title">
        <h3 id="upcoming-title">Upcoming</h3>
        ${job.upcoming.length ? html`<ol id="upcoming">${job.upcoming.map((iso) => html`<li><${Time} iso=${iso} ms=${true} rel=${true} /></li>`)}</ol>`
          : html`<p class="muted">Nothing: ${live ? "paused" : "the job is " + job.status.toLowerCase()}.</p>`}
        ${job.last_run ? html`<h3>Last run</h3><p><${Status} value=${job.last_run.status} /> for <${Time} iso=${job.last_run.scheduled_for} />,
          late ${millis(job.last_run.lateness_ms)}${job.last_run.error ? html`: <span class="error-text">${job.last_run.error}</span>` : null}</p>` : null}
      </section>
    </div>
  </article>`;
}

function Actions({ job, act, live }) {
  const [open, setOpen] = useState(null); // "pause" | "backfill" | null
  const path = `/v1/jobs/${enc(job.job_id)}`;
  return html`<div class="job-actions">
    <div class="buttons" role="toolbar" aria-label="Job actions">
      ${live ? html`<a class="button" href=${`#/jobs/${job.job_id}/edit`} id="edit-job">Edit</a>` : null}
      ${job.status === "ACTIVE" ? html`<button type="button" id="pause-job" aria-expanded=${open === "pause"}
        onClick=${() => setOpen(open === "pause" ? null : "pause")}>Pause…</button>` : null}
      ${job.status === "PAUSED" ? html`<button type="button" id="resume-job"
        onClick=${() => act("Job resumed.", "POST", `${path}/resume`).catch(() => {})}>Resume</button>` : null}
      ${job.status !== "CANCELLED" ? html`<button type="button" id="run-now"
        onClick=${() => act("Run started.", "POST", `${path}/run`).catch(() => {})}>Run now</button>` : null}
      ${live ? html`<button type="button" id="backfill-job" aria-expanded=${open === "backfill"}
        onClick=${() => setOpen(open === "backfill" ? null : "backfill")}>Backfill…</button>` : null}
      ${live ? html`<${Confirm} id="cancel-job" label="Cancel job" question="Cancel this job? No further runs; this cannot be undone."
        confirmLabel="Yes, cancel the job" onConfirm=${() => act("Job cancelled.", "DELETE", path).catch(() => {})} />` : null}
    </div>
    ${open === "pause" ? html`<${PauseForm} path=${path} act=${act} onDone=${() => setOpen(null)} />` : null}
    ${open === "backfill" ? html`<${BackfillForm} path=${path} act=${act} onDone=${() => setOpen(null)} />` : null}
  </div>`;
}

function useFields(initial) {
  const [values, setValues] = useState(initial);
  const [errors, setErrors] = useState({});
  const bind = (field) => ({
    ...fieldProps(field, errors),
    value: values[field],
    onInput: (event) => setValues((old) => ({ ...old, [field]: event.currentTarget.value })),
  });
  return { values, errors, setErrors, bind };
}

function PauseForm({ path, act, onDone }) {
  const { values, errors, setErrors, bind } = useFields({ note: "", until: "" });
  const submit = async (event) => {
    event.preventDefault();
    const body = {};
    if (values.note.trim()) body.note = values.note.trim();
    if (values.until.trim()) body.until = values.until.trim();
    try {
      await act("Job paused.", "POST", `${path}/pause`, body);
      onDone();
    } catch (error) {
      if (error instanceof ApiError) setErrors(errorsFrom(error, ["note", "until"]));
    }
  };
  return html`<form class="inline-form" onSubmit=${submit} aria-label="Pause the job">
    ${errors.form ? html`<p class="field-error" role="alert">${errors.form}</p>` : null}
    <div class="field"><label for="f-note">Note (optional, shown with the pause)</label><input ...${bind("note")} maxlength="500" />
      <${FieldError} errors=${errors} field="note" /></div>
    <div class="field"><label for="f-until">Until (optional: ISO 8601; it resumes by itself)</label><input ...${bind("until")} placeholder="2026-12-01T00:00:00Z" />
      <${FieldError} errors=${errors} field="until" /></div>
    <button type="submit" id="confirm-pause">Pause</button>
  </form>`;
}

function BackfillForm({ path, act, onDone }) {
  const { values, errors, setErrors, bind } = useFields({ from: "", to: "", overlap: "buffer_all" });
  const [answer, setAnswer] = useState(null);
  const submit = async (event) => {
    event.preventDefault();
    try {
      setAnswer(await act("Backfill started.", "POST", `${path}/backfill`,
        { from: values.from.trim(), to: values.to.trim(), overlap: values.overlap }));
    } catch (error) {
      if (error instanceof ApiError) setErrors(errorsFrom(error, ["from", "to", "overlap"]));
    }
  };
  return html`<form class="inline-form" onSubmit=${submit} aria-label="Backfill past occurrences">
    <p class="hint">Runs every occurrence of the schedule between the two times again (naive times are in the schedule's zone).</p>
    ${errors.form ? html`<p class="field-error" role="alert">${errors.form}</p>` : null}
    <div class="pair">
      <div class="field"><label for="f-from">From</label><input ...${bind("from")} placeholder="2026-11-24T20:00:00Z" />
        <${FieldError} errors=${errors} field="from" /></div>
      <div class="field"><label for="f-to">To (not in the future)</label><input ...${bind("to")} />
        <${FieldError} errors=${errors} field="to" /></div>
    </div>
    <div class="field"><label for="f-overlap">Overlap</label>
      <select ...${bind("overlap")} onChange=${bind("overlap").onInput}>
        <option value="buffer_all">buffer_all: one after another</option><option value="allow">allow: all at once</option>
      </select><${FieldError} errors=${errors} field="overlap" /></div>
    <button type="submit">Backfill</button> <button type="button" onClick=${onDone}>Close</button>
    ${answer ? html`<p>${answer.count} occurrence(s) queued, ${answer.overlap}:
      ${answer.occurrences.slice(0, 10).map((iso) => html` <${Time} iso=${iso} />`)}${answer.count > 10 ? " …" : ""}</p>` : null}
  </form>`;
}

function why(run) {
  const parts = [];
  // A day its calendar excluded reads "calendar bavaria"; a run it moved names it too.
  if (run.reason === "calendar") parts.push(`calendar ${run.calendar || ""}`.trim());
  else if (run.reason && !(run.reason === "limited" && run.limited_by)) parts.push(run.reason); // LimitWait says it
  if (run.calendar && run.reason !== "calendar") parts.push(`calendar ${run.calendar}`);
  if (run.covers && run.covers > 1) parts.push(`covers ${run.covers}`);
  if (run.covers_until) parts.push(`until ${run.covers_until}`);
  if (run.overlap_with) parts.push(`overlap with ${run.overlap_with}`);
  return parts.join(" · ");
}

function Runs({ job, version, notify, runId }) {
  const [status, setStatus] = useState("");
  const [reason, setReason] = useState("");
  const [cursors, setCursors] = useState([null]);
  const [page, setPage] = useState(null);
  const [error, setError] = useState(null);
  const [open, setOpen] = useState(runId || null); // #/jobs/<id>/runs/<run_id> opens that run
  useEffect(() => {
    if (runId) setOpen(runId);
  }, [runId]);
  const cursor = cursors[cursors.length - 1];

  async function load() {
    try {
      setPage(await api("GET", `/v1/jobs/${enc(job.job_id)}/runs${query({ limit: 50, status, reason, cursor })}`));
      setError(null);
    } catch (failure) {
      setError(failure);
    }
  }
  useEffect(() => {
    load();
  }, [job.job_id, status, reason, cursor, version]);
  useInterval(load, 3000);

  const points = useMemo(() => {
    const ran = (page ? page.items : []).filter((run) => run.started_at && run.lateness_ms !== null).reverse();
    return [
      ran.map((run) => new Date(run.scheduled_for).getTime() / 1000),
      ran.map((run) => run.lateness_ms),
      ran.map((run) => run.duration_ms ?? null),
    ];
  }, [page]);

  return html`<section aria-labelledby="runs-title" class="runs">
    <h3 id="runs-title">Run history</h3>
    ${points[0].length > 1 ? html`<${Plot} data=${points} series=${["lateness ms", "duration ms"]} units=" ms"
      label=${`Lateness and duration of the last ${points[0].length} runs that started`} />` : null}
    <form class="filters" aria-label="Filter runs" onSubmit=${(e) => e.preventDefault()}>
      <label>Status <select id="filter-run-status" value=${status}
        onChange=${(e) => { setStatus(e.currentTarget.value); setCursors([null]); }}>
        <option value="">any</option>${RUN_STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}</select></label>
      <label>Why not run <select id="filter-reason" value=${reason}
        onChange=${(e) => { setReason(e.currentTarget.value); setCursors([null]); }}>
        <option value="">any</option>${REASONS.map((s) => html`<option value=${s}>${s}</option>`)}</select></label>
    </form>
    ${error ? html`<p class="field-error" role="alert">${error.message}</p>` : null}
    ${page === null ? html`<p class="muted">Loading…</p>` : html`<div class="table-wrap"><table id="runs-table">
      <caption class="visually-hidden">Runs, newest first</caption>
      <thead><tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Kind</th><th scope="col">Scheduled for</th>
        <th scope="col">Started</th><th scope="col">Lateness</th><th scope="col">Attempts</th><th scope="col">Duration</th>
        <th scope="col">Why / error</th></tr></thead>
      <tbody>
        ${page.items.length === 0 ? html`<tr><td colspan="9" class="muted">No runs yet.</td></tr>` : null}
        ${page.items.map((run) => html`<tr key=${run.run_id} class="run-row" data-run-id=${run.run_id} data-status=${run.status}>
          <td><button type="button" class="link mono" aria-expanded=${open === run.run_id}
            onClick=${() => setOpen(open === run.run_id ? null : run.run_id)}>${run.run_id}</button></td>
          <td><${Status} value=${run.status} /></td>
          <td>${run.kind}</td>
          <td><${Time} iso=${run.scheduled_for} ms=${true} /></td>
          <td><${Time} iso=${run.started_at} ms=${true} /></td>
          <td class="lateness">${millis(run.lateness_ms)}</td>
          <td>${run.attempt}</td>
          <td>${run.duration_ms != null ? millis(run.duration_ms) : "–"}</td>
          <td class="why"><${LimitWait} run=${run} /> ${why(run)}${run.note ? html` <q>${run.note}</q>` : null}${run.by ? html` <span class="muted">by ${run.by}</span>` : null}
            ${run.moved_from && run.moved_from.length ? html`<div class="moved">moved from
              ${run.moved_from.map((iso, i) => html`${i ? ", " : " "}<${Time} iso=${iso} />`)}</div>` : null}
            ${run.error ? html`<div class=${run.reason === "calendar" ? "muted" : "error-text"}>${run.error}</div>` : null}</td>
        </tr>`)}
      </tbody></table></div>
      <nav class="pager" aria-label="Pages of runs">
        <button type="button" disabled=${cursors.length === 1} onClick=${() => setCursors(cursors.slice(0, -1))}>Newer</button>
        <button type="button" disabled=${!page.next_cursor} onClick=${() => setCursors([...cursors, page.next_cursor])}>Older</button>
      </nav>`}
    ${open ? html`<${RunDetail} jobId=${job.job_id} runId=${open} notify=${notify} onChange=${load}
      onClose=${() => setOpen(null)} />` : null}
  </section>`;
}

function RunDetail({ jobId, runId, notify, onChange, onClose }) {
  const [run, setRun] = useState(null);
  const [error, setError] = useState(null);
  const path = `/v1/jobs/${enc(jobId)}/runs/${enc(runId)}`;
  async function load() {
    try {
      setRun(await api("GET", path));
      setError(null);
    } catch (failure) {
      setError(failure);
    }
  }
  useEffect(() => {
    setRun(null);
    load();
  }, [runId]);
  useInterval(load, 2000, Boolean(run) && !FINISHED_RUN.includes(run.status));

  const cancel = async () => {
    try {
      setRun(await api("POST", `${path}/cancel`));
      notify("Run cancelled.");
      onChange();
    } catch (failure) {
      notify(failure.message, true);
    }
  };

  return html`<section class="run-detail" id="run-detail" aria-labelledby="run-title">
    <div class="title-row"><h3 id="run-title">Run <span class="mono">${runId}</span></h3>
      <button type="button" onClick=${onClose}>Close</button></div>
    ${error ? html`<p class="field-error" role="alert">${error.message}</p>` : null}
    ${!run ? html`<p class="muted">Loading…</p>` : html`
      <p><${Status} value=${run.status} /> ${run.kind}, scheduled for <${Time} iso=${run.scheduled_for} ms=${true} />,
        queued <${Time} iso=${run.queued_at} ms=${true} />, started <${Time} iso=${run.started_at} ms=${true} />,
        finished <${Time} iso=${run.finished_at} ms=${true} />; late ${millis(run.lateness_ms)}${run.jitter_ms
          ? `, jitter ${millis(run.jitter_ms)}` : ""}; ${run.executions} execution(s)
        ${run.next_attempt_at ? html`; next attempt <${Time} iso=${run.next_attempt_at} />` : null}</p>
      ${run.limited_by ? html`<p class="run-limit" id="run-limit"><${LimitWait} run=${run} /></p>` : null}
      ${run.moved_from && run.moved_from.length ? html`<p class="moved">Moved by calendar ${run.calendar} from
        ${run.moved_from.map((iso, i) => html`${i ? ", " : " "}<${Time} iso=${iso} />`)}</p>` : null}
      ${run.error ? html`<p class=${run.reason === "calendar" ? "" : "error-text"}>${run.error}</p>` : null}
      ${!FINISHED_RUN.includes(run.status) ? html`<${Confirm} id="cancel-run" label="Cancel this run"
        question="Cancel this run? It will not start (or is aborted) and is not retried." confirmLabel="Yes, cancel the run"
        onConfirm=${cancel} />` : null}
      <div class="table-wrap"><table id="attempts-table">
        <caption>Attempts</caption>
        <thead><tr><th scope="col">#</th><th scope="col">Outcome</th><th scope="col">Started</th><th scope="col">Duration</th>
          <th scope="col">HTTP status</th><th scope="col">Error</th><th scope="col">Response (first 4 KiB)</th></tr></thead>
        <tbody>
          ${(run.attempts || []).length === 0 ? html`<tr><td colspan="7" class="muted">No attempt has started.</td></tr>` : null}
          ${(run.attempts || []).map((attempt) => html`<tr>
            <td>${attempt.attempt}</td><td><${Status} value=${attempt.outcome || "RUNNING"} /></td>
            <td><${Time} iso=${attempt.started_at} ms=${true} /></td><td>${millis(attempt.duration_ms)}</td>
            <td>${attempt.status_code ?? "–"}</td><td class="error-text">${attempt.error || ""}</td>
            <td><pre class="response">${attempt.response || ""}</pre></td>
          </tr>`)}
        </tbody></table></div>`}
  </section>`;
}
