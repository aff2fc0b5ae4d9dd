// Create a job (POST /v1/jobs) or change one (PATCH /v1/jobs/{job_id}), with every schedule form and
// target type of docs/api.md, the business calendar a schedule follows, and the schedule's next fire
// times while typing (POST /v1/schedules/preview), with the days its calendar skips or moves.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import {
  ApiError, FieldError, Json, Time, api, browserZone, cronDialect, enc, errorsFrom, fieldProps, html,
  resolveWhen,
} from "./lib.js";
import { useCalendars } from "./calendars.js";

// Every input of the form is named by the API's own path for it, so an error naming a field lands there.
const FIELDS = [
  "name", "schedule", "schedule.at", "schedule.cron", "schedule.rate", "schedule.timezone",
  "schedule.start_at", "schedule.end_at", "schedule.misfire", "schedule.catchup_seconds", "schedule.overlap",
  "schedule.calendar", "schedule.on_excluded", "jitter_seconds", "target", "target.type", "target.url", "target.method", "target.headers",
  "target.timeout_seconds", "target.function", "target.queue_url", "target.topic_arn", "target.bus",
  "target.source", "target.detail_type", "payload", "retry", "retry.max_attempts", "retry.backoff_seconds",
  "retry.max_backoff_seconds", "timeout_seconds", "tags", "signing_secret", "pause_on_failures",
  "max_runs", "on_complete", "delete_after_days", "alerts", "alerts.target", "alerts.target.type",
  "alerts.target.url", "alerts.target.topic_arn", "alerts.failed", "alerts.missed", "alerts.late_seconds",
  "alerts.running_seconds", "alerts.limited_seconds", "dead_letter", "dead_letter.queue_url", "max_concurrent",
];
const KINDS = ["at", "cron", "rate"];
const TARGET_TYPES = ["http", "lambda", "sqs", "sns", "eventbridge"];
const OVERLAPS = [
  ["allow", "allow: start at its second, runs may overlap"],
  ["skip", "skip: do not run while one is under way"],
  ["buffer_one", "buffer_one: one waits for the run under way"],
  ["buffer_all", "buffer_all: each waits its turn"],
  ["cancel_other", "cancel_other: cancel the run under way"],
];
export const ON_EXCLUDED = [
  ["skip", "skip: no run that day"],
  ["next_business_day", "next business day, at the same time"],
  ["previous_business_day", "previous business day, at the same time"],
];
const MISFIRES = [
  ["run_once", "run_once: run the latest missed occurrence"],
  ["skip", "skip: record missed ones as skipped"],
  ["run_all", "run_all: run every missed occurrence"],
];

const EMPTY = {
  name: "", kind: "at", "schedule.at": "in 30s", "schedule.cron": "", "schedule.rate": "",
  "schedule.timezone": "UTC", "schedule.start_at": "", "schedule.end_at": "", "schedule.misfire": "run_once",
  "schedule.catchup_seconds": "", "schedule.overlap": "allow", "schedule.calendar": "",
  "schedule.on_excluded": "skip", jitter_seconds: "",
  "target.type": "http", "target.url": "", "target.method": "POST", "target.headers": "",
  "target.timeout_seconds": "", "target.function": "", "target.queue_url": "", "target.topic_arn": "",
  "target.bus": "", "target.source": "", "target.detail_type": "", payload: "",
  "retry.max_attempts": "3", "retry.backoff_seconds": "5", "retry.max_backoff_seconds": "600",
  timeout_seconds: "30", tags: "", signing_secret: "", remove_secret: false, pause_on_failures: "",
  max_runs: "", on_complete: "keep", delete_after_days: "", max_concurrent: "",
  alerts_on: false, "alerts.target.type": "http", "alerts.target.url": "", "alerts.target.topic_arn": "",
  "alerts.failed": true, "alerts.missed": false, "alerts.late_seconds": "", "alerts.running_seconds": "",
  "alerts.limited_seconds": "", "dead_letter.queue_url": "",
};

/** The form's text values for an existing job (the job view of the API). */
export function stateOfJob(job) {
  const schedule = job.schedule || {};
  const target = job.target || {};
  const retry = job.retry || {};
  const text = (value) => (value === null || value === undefined ? "" : String(value));
  return {
    ...EMPTY,
    name: text(job.name),
    kind: KINDS.find((kind) => schedule[kind]) || "cron",
    "schedule.at": text(schedule.at),
    "schedule.cron": text(schedule.cron),
    "schedule.rate": text(schedule.rate),
    "schedule.timezone": text(schedule.timezone || "UTC"),
    "schedule.start_at": text(schedule.start_at),
    "schedule.end_at": text(schedule.end_at),
    "schedule.misfire": schedule.misfire || "run_once",
    "schedule.catchup_seconds": text(schedule.catchup_seconds),
    "schedule.overlap": schedule.overlap || "allow",
    "schedule.calendar": text(schedule.calendar),
    "schedule.on_excluded": schedule.on_excluded || "skip",
    jitter_seconds: job.jitter_seconds ? String(job.jitter_seconds) : "",
    "target.type": target.type || "http",
    "target.url": text(target.url),
    "target.method": target.method || "POST",
    "target.headers": Object.entries(target.headers || {}).map(([k, v]) => `${k}: ${v}`).join("\n"),
    "target.timeout_seconds": text(target.timeout_seconds),
    "target.function": text(target.function),
    "target.queue_url": text(target.queue_url),
    "target.topic_arn": text(target.topic_arn),
    "target.bus": text(target.bus),
    "target.source": text(target.source),
    "target.detail_type": text(target.detail_type),
    payload: job.payload === null || job.payload === undefined ? "" : JSON.stringify(job.payload, null, 2),
    "retry.max_attempts": text(retry.max_attempts),
    "retry.backoff_seconds": text(retry.backoff_seconds),
    "retry.max_backoff_seconds": text(retry.max_backoff_seconds),
    timeout_seconds: text(job.timeout_seconds),
    tags: Object.entries(job.tags || {}).map(([k, v]) => `${k}=${v}`).join("\n"),
    pause_on_failures: text(job.pause_on_failures),
    max_runs: text(job.max_runs),
    max_concurrent: text(job.max_concurrent),
    on_complete: job.on_complete || "keep",
    delete_after_days: job.on_complete === "delete" ? text(job.delete_after_days) : "",
    "dead_letter.queue_url": job.dead_letter ? text(job.dead_letter.queue_url) : "",
    ...alertsState(job.alerts),
  };
}

function alertsState(alerts) {
  if (!alerts) return { alerts_on: false };
  const target = alerts.target || {};
  return {
    alerts_on: true,
    "alerts.target.type": target.type || "http",
    "alerts.target.url": target.url || "",
    "alerts.target.topic_arn": target.topic_arn || "",
    "alerts.failed": Boolean(alerts.failed),
    "alerts.missed": Boolean(alerts.missed),
    "alerts.late_seconds": alerts.late_seconds ? String(alerts.late_seconds) : "",
    "alerts.running_seconds": alerts.running_seconds ? String(alerts.running_seconds) : "",
    "alerts.limited_seconds": alerts.limited_seconds ? String(alerts.limited_seconds) : "",
  };
}

/** The job's `alerts` the form stands for: null when off; the kinds chosen, and where they go. */
function alertsOf(state) {
  if (!state.alerts_on) return null;
  const type = state["alerts.target.type"];
  const target = type === "sns"
    ? { type, topic_arn: state["alerts.target.topic_arn"].trim() }
    : { type, url: state["alerts.target.url"].trim() };
  const alerts = { target, failed: state["alerts.failed"], missed: state["alerts.missed"] };
  if (state["alerts.late_seconds"].trim()) alerts.late_seconds = number(state["alerts.late_seconds"]);
  if (state["alerts.running_seconds"].trim()) alerts.running_seconds = number(state["alerts.running_seconds"]);
  if (state["alerts.limited_seconds"].trim()) alerts.limited_seconds = number(state["alerts.limited_seconds"]);
  return alerts;
}

class FormProblem extends Error {
  constructor(field, reason) {
    super(reason);
    this.field = field;
  }
}

// A number as typed; anything else goes to the API as text, which names the field and says why.
const number = (text) => (text.trim() !== "" && Number.isFinite(Number(text)) ? Number(text) : text.trim());

function pairs(text, separator, field) {
  const result = {};
  for (const line of text.split(/\n|,(?=[^,]*[=:])/)) {
    if (!line.trim()) continue;
    const at = line.indexOf(separator);
    if (at <= 0) throw new FormProblem(field, `"${line.trim()}" is not NAME${separator}VALUE`);
    result[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return result;
}

export function scheduleOf(state) {
  const kind = state.kind;
  const value = state[`schedule.${kind}`];
  const schedule = { [kind]: kind === "at" ? resolveWhen(value) : value.trim() };
  if (state["schedule.timezone"].trim()) schedule.timezone = state["schedule.timezone"].trim();
  if (kind !== "at") {
    if (state["schedule.start_at"].trim()) schedule.start_at = state["schedule.start_at"].trim();
    if (state["schedule.end_at"].trim()) schedule.end_at = state["schedule.end_at"].trim();
    schedule.misfire = state["schedule.misfire"];
    if (state["schedule.catchup_seconds"].trim()) schedule.catchup_seconds = number(state["schedule.catchup_seconds"]);
    schedule.overlap = state["schedule.overlap"];
    if (state["schedule.calendar"]) {
      schedule.calendar = state["schedule.calendar"];
      schedule.on_excluded = state["schedule.on_excluded"];
    }
  }
  return schedule;
}

function targetOf(state) {
  const type = state["target.type"];
  const optional = (target, key) => {
    const value = state[`target.${key}`].trim();
    if (value) target[key] = value;
    return target;
  };
  if (type === "http") {
    const target = { type, url: state["target.url"].trim(), method: state["target.method"] };
    target.headers = pairs(state["target.headers"], ":", "target.headers");
    if (state["target.timeout_seconds"].trim()) target.timeout_seconds = number(state["target.timeout_seconds"]);
    return target;
  }
  if (type === "lambda") return { type, function: state["target.function"].trim() };
  if (type === "sqs") return { type, queue_url: state["target.queue_url"].trim() };
  if (type === "sns") return { type, topic_arn: state["target.topic_arn"].trim() };
  return ["bus", "source", "detail_type"].reduce(optional, { type });
}

/** The request body the form stands for (a whole job; an edit sends the parts that differ). */
export function bodyOf(state) {
  const body = {
    name: state.name.trim() || null,
    schedule: scheduleOf(state),
    target: targetOf(state),
    retry: {
      max_attempts: number(state["retry.max_attempts"]),
      backoff_seconds: number(state["retry.backoff_seconds"]),
      max_backoff_seconds: number(state["retry.max_backoff_seconds"]),
    },
    timeout_seconds: number(state.timeout_seconds),
    tags: pairs(state.tags, "=", "tags"),
    jitter_seconds: state.jitter_seconds.trim() ? number(state.jitter_seconds) : 0,
    pause_on_failures: state.pause_on_failures.trim() ? number(state.pause_on_failures) : null,
    max_runs: state.max_runs.trim() ? number(state.max_runs) : null,
    max_concurrent: state.max_concurrent.trim() ? number(state.max_concurrent) : null,
    on_complete: state.on_complete,
    alerts: alertsOf(state),
    dead_letter: state["dead_letter.queue_url"].trim()
      ? { type: "sqs", queue_url: state["dead_letter.queue_url"].trim() } : null,
  };
  if (state.on_complete === "delete" && state.delete_after_days.trim()) {
    body.delete_after_days = number(state.delete_after_days);
  }
  if (state.payload.trim()) {
    try {
      body.payload = JSON.parse(state.payload);
    } catch (error) {
      throw new FormProblem("payload", `not JSON: ${error.message}`);
    }
  } else {
    body.payload = null;
  }
  return body;
}

function createBody(state) {
  const body = bodyOf(state);
  for (const key of ["name", "payload", "pause_on_failures", "max_runs", "max_concurrent", "alerts", "dead_letter"]) if (body[key] === null) delete body[key];
  if (body.on_complete === "keep") delete body.on_complete;
  if (!body.jitter_seconds) delete body.jitter_seconds;
  if (state.signing_secret) body.signing_secret = state.signing_secret;
  return body;
}

function patchBody(state, job) {
  const before = bodyOf(stateOfJob(job));
  const after = bodyOf(state);
  const changes = {};
  for (const [key, value] of Object.entries(after)) {
    if (JSON.stringify(value) !== JSON.stringify(before[key])) changes[key] = value;
  }
  // The job view shows an `at` in UTC; re-sending the same instant written another way changes nothing.
  if (changes.schedule && state.kind === "at" && job.schedule.at
      && new Date(resolveWhen(state["schedule.at"])).getTime() === new Date(job.schedule.at).getTime()
      && JSON.stringify({ ...after.schedule, at: null }) === JSON.stringify({ ...before.schedule, at: null })) {
    delete changes.schedule;
  }
  if (state.remove_secret) changes.signing_secret = null;
  else if (state.signing_secret) changes.signing_secret = state.signing_secret;
  return changes;
}

/** PATCH, once more if the job changed under it (409, field `version`): the body holds only the changes. */
async function patch(jobId, body) {
  try {
    return await api("PATCH", `/v1/jobs/${enc(jobId)}`, body);
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 409 || error.field !== "version") throw error;
    return api("PATCH", `/v1/jobs/${enc(jobId)}`, body);
  }
}

// --------------------------------------------------------------------------------------- preview

const FATES = { skipped: "skipped", moved: "moved" };

/** A year on from now, as `until` (the preview lists every fire time up to it, at most 1,000). */
const yearFromNow = () => new Date(Date.now() + 365 * 86400 * 1000).toISOString();

function Preview({ state, onErrors }) {
  const [answer, setAnswer] = useState(null);
  const [pending, setPending] = useState(false);
  const [year, setYear] = useState(false); // with a calendar: the excluded days of the next 12 months
  const [tooMany, setTooMany] = useState(null);
  const schedule = useMemo(() => scheduleOf(state), [
    state.kind, state["schedule.at"], state["schedule.cron"], state["schedule.rate"], state["schedule.timezone"],
    state["schedule.start_at"], state["schedule.end_at"], state["schedule.misfire"], state["schedule.catchup_seconds"],
    state["schedule.calendar"], state["schedule.on_excluded"],
  ]);
  const wholeYear = year && Boolean(schedule.calendar);
  const key = JSON.stringify([schedule, wholeYear]);
  useEffect(() => {
    setTooMany(null);
    if (!schedule[state.kind]) {
      setAnswer(null);
      onErrors({});
      return undefined;
    }
    setPending(true);
    let stale = false;
    const timer = setTimeout(async () => {
      const { overlap: _overlap, ...previewed } = schedule;
      const span = wholeYear ? { until: yearFromNow() } : { count: 5 };
      try {
        const result = await api("POST", "/v1/schedules/preview", { schedule: previewed, ...span });
        if (stale) return;
        setAnswer(result);
        onErrors({});
      } catch (error) {
        if (stale) return;
        setAnswer(null);
        if (error instanceof ApiError && error.field === "until") {
          setTooMany(error.reason); // the schedule is fine: a year of it is too many fire times to list
          onErrors({});
        } else {
          onErrors(error instanceof ApiError ? errorsFrom(error, FIELDS) : { schedule: String(error) });
        }
      } finally {
        if (!stale) setPending(false);
      }
    }, 350);
    return () => {
      stale = true;
      clearTimeout(timer);
    };
  }, [key]);

  const calendar = answer && answer.calendar;
  // Over a year, the weekends would bury the rest: counted, not listed.
  const listed = calendar ? calendar.excluded.filter((day) => !wholeYear || !day.reason.startsWith("not a working day")) : [];
  const weekly = calendar ? calendar.excluded.length - listed.length : 0;
  return html`<section class="preview" aria-live="polite" aria-busy=${pending ? "true" : "false"}>
    <h3>Next fire times</h3>
    ${schedule.calendar ? html`<label class="check small"><input type="checkbox" id="preview-year" checked=${year}
      onChange=${(event) => setYear(event.currentTarget.checked)} /> the calendar's excluded days over the next
      12 months</label>` : null}
    ${tooMany ? html`<p class="note" id="preview-too-many">Over 12 months: ${tooMany} (untick it to see the next five).</p>` : null}
    ${!answer ? (tooMany ? null : html`<p class="muted">${pending ? "Checking…" : "Type a schedule to see when it fires."}</p>`)
      : html`<ol id="preview-times">
          ${answer.fire_times.slice(0, 5).map((fire) => html`<li>
            <${Time} iso=${fire.at} ms=${true} rel=${true} />
            <span class="muted"> · ${fire.local} in ${answer.timezone}</span>
            ${fire.dst ? html` <span class="badge">${fire.dst.kind === "gap"
              ? `DST gap: ${fire.dst.local} does not exist, fires after the jump`
              : `DST repeat: ${fire.dst.local} happens twice, fires on the first pass`}</span>` : null}
            ${fire.moved_from && fire.moved_from.length ? html`<div class="moved">moved from
              ${fire.moved_from.map((iso, i) => html`${i ? ", " : " "}<${Time} iso=${iso} />`)}</div>` : null}
          </li>`)}
        </ol>
        ${answer.fire_times.length > 5 ? html`<p class="muted small">… ${answer.fire_times.length} fire times in the next 12 months.</p>` : null}
        ${answer.fire_times.length === 0 ? html`<p class="muted">It never fires from now on.</p>` : null}
        ${calendar ? html`<h4>Excluded by calendar ${calendar.name} (${calendar.on_excluded})</h4>
          ${weekly ? html`<p class="muted small">${weekly} day(s) off every week (weekends) not listed.</p>` : null}
          ${listed.length ? html`<ul class="excluded" id="preview-excluded">${listed.map((day) => html`<li
            data-day=${day.day} data-fate=${day.fate}>${day.day}: ${day.reason} · <b>${FATES[day.fate] || day.fate}</b>${day.moved_to
              ? html` to <${Time} iso=${day.moved_to} />` : null}</li>`)}</ul>`
            : weekly ? null : html`<p class="muted small">No fire time listed falls on an excluded day.</p>`}` : null}
        ${(answer.notes || []).map((note) => html`<p class="note">${note}</p>`)}`}
  </section>`;
}

// ------------------------------------------------------------------------------------------- form

function Field({ field, label, hint, errors, children }) {
  return html`<div class="field">
    <label for=${fieldProps(field).id}>${label}</label>
    ${children}
    ${hint ? html`<p class="hint">${hint}</p>` : null}
    <${FieldError} errors=${errors} field=${field} />
  </div>`;
}

export function JobForm({ job, onDone, notify }) {
  const editing = Boolean(job);
  const [state, setState] = useState(() => (editing ? stateOfJob(job) : { ...EMPTY }));
  const [errors, setErrors] = useState({});
  const [previewErrors, setPreviewErrors] = useState({});
  const [busy, setBusy] = useState(false);
  const first = useRef(null);
  useEffect(() => first.current && first.current.focus(), []);

  const shown = { ...previewErrors, ...errors };
  const set = (field) => (event) => {
    const value = event.currentTarget.type === "checkbox" ? event.currentTarget.checked : event.currentTarget.value;
    setState((old) => ({ ...old, [field]: value }));
  };
  const input = (field, extra = {}) => html`<input ...${fieldProps(field, shown)} value=${state[field]}
    onInput=${set(field)} ...${extra} />`;
  const select = (field, options) => html`<select ...${fieldProps(field, shown)} value=${state[field]}
    onChange=${set(field)}>${options.map(([value, text]) => html`<option value=${value}>${text}</option>`)}</select>`;
  const area = (field, rows, extra = {}) => html`<textarea ...${fieldProps(field, shown)} rows=${rows}
    value=${state[field]} onInput=${set(field)} ...${extra}></textarea>`;
  const recurring = state.kind !== "at";
  const type = state["target.type"];
  const calendars = useCalendars();
  const calendarNames = (calendars || []).map((calendar) => calendar.name);
  // The job's own calendar stays a choice while the list loads, or if it is gone.
  if (state["schedule.calendar"] && !calendarNames.includes(state["schedule.calendar"])) {
    calendarNames.push(state["schedule.calendar"]);
  }

  async function submit(event) {
    event.preventDefault();
    setErrors({});
    let body;
    try {
      body = editing ? patchBody(state, job) : createBody(state);
    } catch (error) {
      if (error instanceof FormProblem) {
        setErrors({ [error.field]: error.message });
        return;
      }
      throw error;
    }
    if (editing && Object.keys(body).length === 0) {
      notify("Nothing changed.");
      onDone(job);
      return;
    }
    setBusy(true);
    try {
      const answer = editing ? await patch(job.job_id, body) : await api("POST", "/v1/jobs", body);
      notify(editing ? "Job changed." : "Job created.");
      onDone(answer);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      const found = errorsFrom(error, FIELDS);
      setErrors(found);
      const firstField = Object.keys(found).find((field) => field !== "form");
      const element = firstField && document.querySelector(`[data-field="${CSS.escape(firstField)}"]`);
      if (element) element.focus();
    } finally {
      setBusy(false);
    }
  }

  return html`<form class="job-form" onSubmit=${submit} novalidate aria-label=${editing ? "Change the job" : "Create a job"}>
    <h2>${editing ? html`Change ${job.name || job.job_id}` : "Create a job"}</h2>
    ${shown.form ? html`<p class="field-error" id="err-form" role="alert">${shown.form}</p>` : null}
    <div class="columns">
    <fieldset>
      <legend>Schedule</legend>
      <${Field} field="name" label="Name (optional)" errors=${shown}
        hint="Unique among your live jobs: letters, digits and ._:-">${input("name", { ref: first, autocomplete: "off" })}<//>
      <div class="field" role="radiogroup" aria-labelledby="kind-label">
        <span id="kind-label" class="label">Form</span>
        <div class="radios">
          ${KINDS.map((kind) => html`<label class="radio"><input type="radio" name="kind" id=${`kind-${kind}`}
            value=${kind} checked=${state.kind === kind} onChange=${set("kind")} />
            ${{ at: "once (at)", cron: "cron", rate: "rate" }[kind]}</label>`)}
        </div>
        <${FieldError} errors=${shown} field="schedule" />
      </div>
      ${state.kind === "at" ? html`<${Field} field="schedule.at" label="At" errors=${shown}
          hint="ISO 8601 (2026-11-22T13:00:05+01:00, or without offset in the time zone below), or: in 30s, in 5 minutes, in 2h">
          ${input("schedule.at", { autocomplete: "off", spellcheck: false })}<//>` : null}
      ${state.kind === "cron" ? html`<${Field} field="schedule.cron" label="Cron" errors=${shown}
          hint=${cronDialect(state["schedule.cron"])}>
          ${input("schedule.cron", { autocomplete: "off", spellcheck: false, placeholder: "0 13 * * 1-5" })}<//>` : null}
      ${state.kind === "rate" ? html`<${Field} field="schedule.rate" label="Rate" errors=${shown}
          hint="5 minutes, 30 seconds, rate(1 hour): seconds, minutes, hours or days">
          ${input("schedule.rate", { autocomplete: "off", placeholder: "5 minutes" })}<//>` : null}
      <${Field} field="schedule.timezone" label="Time zone" errors=${shown}
        hint=${html`IANA name; cron fields match wall-clock time there. Yours: <button type="button" class="link"
          onClick=${() => setState((old) => ({ ...old, "schedule.timezone": browserZone() }))}>${browserZone()}</button>`}>
        ${input("schedule.timezone", { list: "zones", autocomplete: "off" })}<//>
      <datalist id="zones">${(Intl.supportedValuesOf ? Intl.supportedValuesOf("timeZone") : ["UTC"])
        .map((zone) => html`<option value=${zone}></option>`)}</datalist>
      ${recurring ? html`
        <div class="pair">
          <${Field} field="schedule.start_at" label="Start at (optional)" errors=${shown}>${input("schedule.start_at", { placeholder: "ISO 8601" })}<//>
          <${Field} field="schedule.end_at" label="End at (optional, inclusive)" errors=${shown}>${input("schedule.end_at", { placeholder: "ISO 8601" })}<//>
        </div>
        <${Field} field="schedule.misfire" label="Misfire (after an outage)" errors=${shown}>${select("schedule.misfire", MISFIRES)}<//>
        <${Field} field="schedule.catchup_seconds" label="Catch-up window, seconds (optional)" errors=${shown}>
          ${input("schedule.catchup_seconds", { inputmode: "numeric" })}<//>
        <${Field} field="schedule.overlap" label="Overlap (a run due while one is under way)" errors=${shown}>
          ${select("schedule.overlap", OVERLAPS)}<//>
        <div class="pair">
          <${Field} field="schedule.calendar" label="Calendar (business days)" errors=${shown}
            hint=${html`<a href="#/calendars">Your calendars</a>; a fire time on a day it excludes is skipped or moved`}>
            ${select("schedule.calendar", [["", "none"], ...calendarNames.map((name) => [name, name])])}<//>
          ${state["schedule.calendar"] ? html`<${Field} field="schedule.on_excluded" label="On an excluded day" errors=${shown}>
            ${select("schedule.on_excluded", ON_EXCLUDED)}<//>` : null}
        </div>` : null}
      <${Field} field="jitter_seconds" label="Jitter, seconds (optional)" errors=${shown}
        hint="Each occurrence fires up to this many seconds after its time, fixed per occurrence">
        ${input("jitter_seconds", { inputmode: "numeric" })}<//>
      <${Preview} state=${state} onErrors=${setPreviewErrors} />
    </fieldset>
    <fieldset>
      <legend>Target</legend>
      <${Field} field="target.type" label="Type" errors=${shown}>
        ${select("target.type", TARGET_TYPES.map((t) => [t, { http: "HTTP webhook", lambda: "Lambda function", sqs: "SQS queue", sns: "SNS topic", eventbridge: "EventBridge bus" }[t]]))}<//>
      ${type === "http" ? html`
        <${Field} field="target.url" label="URL" errors=${shown}
          hint="http or https; may use {{run_id}}, {{scheduled_for}}, {{attempt}}, {{job_id}}">
          ${input("target.url", { type: "url", placeholder: "https://example.com/hook", spellcheck: false })}<//>
        <div class="pair">
          <${Field} field="target.method" label="Method" errors=${shown}>
            ${select("target.method", ["GET", "POST", "PUT", "PATCH", "DELETE"].map((m) => [m, m]))}<//>
          <${Field} field="target.timeout_seconds" label="Call timeout, s (optional)" errors=${shown}>
            ${input("target.timeout_seconds", { inputmode: "decimal" })}<//>
        </div>
        <${Field} field="target.headers" label="Headers (one Name: value a line)" errors=${shown}>
          ${area("target.headers", 2, { spellcheck: false })}<//>` : null}
      ${type === "lambda" ? html`<${Field} field="target.function" label="Function name or ARN" errors=${shown}>
          ${input("target.function", { spellcheck: false })}<//>` : null}
      ${type === "sqs" ? html`<${Field} field="target.queue_url" label="Queue URL" errors=${shown}>
          ${input("target.queue_url", { spellcheck: false })}<//>` : null}
      ${type === "sns" ? html`<${Field} field="target.topic_arn" label="Topic ARN" errors=${shown}>
          ${input("target.topic_arn", { spellcheck: false })}<//>` : null}
      ${type === "eventbridge" ? html`
        <${Field} field="target.bus" label="Bus (name or ARN; default: default)" errors=${shown}>${input("target.bus")}<//>
        <div class="pair">
          <${Field} field="target.source" label="Source (default: punctual)" errors=${shown}>${input("target.source")}<//>
          <${Field} field="target.detail_type" label="Detail type (default: Punctual Job Run)" errors=${shown}>${input("target.detail_type")}<//>
        </div>` : null}
      <${Field} field="payload" label="Payload (JSON, optional)" errors=${shown}
        hint="The request body, message or event detail; may use the templates above">
        ${area("payload", 4, { spellcheck: false, class: "mono" })}<//>
    </fieldset>
    <fieldset>
      <legend>Retries and the rest</legend>
      <div class="triple">
        <${Field} field="retry.max_attempts" label="Attempts" errors=${shown}>${input("retry.max_attempts", { inputmode: "numeric" })}<//>
        <${Field} field="retry.backoff_seconds" label="Backoff, s" errors=${shown}>${input("retry.backoff_seconds", { inputmode: "decimal" })}<//>
        <${Field} field="retry.max_backoff_seconds" label="Max backoff, s" errors=${shown}>${input("retry.max_backoff_seconds", { inputmode: "decimal" })}<//>
      </div>
      <${FieldError} errors=${shown} field="retry" />
      <div class="pair">
        <${Field} field="timeout_seconds" label="Attempt timeout, s" errors=${shown}>${input("timeout_seconds", { inputmode: "numeric" })}<//>
        <${Field} field="pause_on_failures" label="Pause after N failed runs (optional)" errors=${shown}>
          ${input("pause_on_failures", { inputmode: "numeric" })}<//>
      </div>
      <${Field} field="max_concurrent" label="Max concurrent runs (optional)" errors=${shown}
        hint=${html`At most this many of its attempts at once (1 to 1,000); more wait their turn. Caps shared by
          several jobs: <a href="#/limits">Limits</a>`}>
        ${input("max_concurrent", { inputmode: "numeric" })}<//>
      <${Field} field="dead_letter.queue_url" label="Dead-letter SQS queue URL for failed runs (optional)" errors=${shown}>
        ${input("dead_letter.queue_url", { spellcheck: false, placeholder: "https://sqs.<region>.amazonaws.com/<account>/<queue>" })}<//>
      <${Field} field="tags" label="Tags (one key=value a line)" errors=${shown}>${area("tags", 2, { spellcheck: false })}<//>
      <${Field} field="signing_secret" label=${editing ? (job.has_signing_secret ? "New signing secret (empty: keep the current one)" : "Signing secret (optional)") : "Signing secret (optional, 16+ characters)"} errors=${shown}>
        ${input("signing_secret", { type: "password", autocomplete: "new-password" })}<//>
      ${editing && job.has_signing_secret ? html`<label class="check"><input type="checkbox" id="f-remove-secret"
        checked=${state.remove_secret} onChange=${set("remove_secret")} /> Remove the signing secret</label>` : null}
      ${recurring ? html`<div class="pair">
        <${Field} field="max_runs" label="End after N runs (optional)" errors=${shown}>${input("max_runs", { inputmode: "numeric" })}<//>
        <${Field} field="on_complete" label="Once it has ended" errors=${shown}>
          ${select("on_complete", [["keep", "keep it"], ["delete", "delete it and its history"]])}<//>
      </div>` : html`<${Field} field="on_complete" label="Once it has run" errors=${shown}>
          ${select("on_complete", [["keep", "keep it"], ["delete", "delete it and its history"]])}<//>`}
      ${state.on_complete === "delete" ? html`<${Field} field="delete_after_days" label="Delete after, days (default 7)"
        errors=${shown}>${input("delete_after_days", { inputmode: "numeric" })}<//>` : null}
      <${AlertsEditor} state=${state} set=${set} input=${input} select=${select} errors=${shown} />
    </fieldset>
    </div>
    <div class="actions">
      <button type="submit" class="primary" id="submit-job" disabled=${busy}>${editing ? "Save changes" : "Create job"}</button>
      <button type="button" onClick=${() => onDone(null)}>Cancel</button>
    </div>
  </form>`;
}

/**
 * ALERTS: per-job alerts (the job field `alerts`, docs/api.md "Alerts"): where they go (a webhook or
 * an SNS topic) and on what (failed, missed, late, running long, waiting on a limit). The job view shows them read-only.
 */
function AlertsEditor({ state, set, input, select, errors }) {
  const check = (field, label) => html`<label class="check"><input type="checkbox" ...${fieldProps(field, errors)}
    checked=${state[field]} onChange=${set(field)} /> ${label}</label>`;
  return html`<fieldset class="alerts" aria-describedby="alerts-hint">
    <legend>Alerts</legend>
    <p class="hint" id="alerts-hint">Whom to tell when something goes wrong with this job.</p>
    ${check("alerts_on", "Send alerts")}
    <${FieldError} errors=${errors} field="alerts" />
    ${state.alerts_on ? html`
      <div class="pair">
        <${Field} field="alerts.target.type" label="Send to" errors=${errors}>
          ${select("alerts.target.type", [["http", "a webhook"], ["sns", "an SNS topic"]])}<//>
        ${state["alerts.target.type"] === "sns"
          ? html`<${Field} field="alerts.target.topic_arn" label="Topic ARN" errors=${errors}>${input("alerts.target.topic_arn")}<//>`
          : html`<${Field} field="alerts.target.url" label="Webhook URL" errors=${errors}>${input("alerts.target.url", { type: "url" })}<//>`}
      </div>
      <${FieldError} errors=${errors} field="alerts.target" />
      <div class="radios">${check("alerts.failed", "a run failed")} ${check("alerts.missed", "an occurrence was missed")}</div>
      <div class="pair">
        <${Field} field="alerts.late_seconds" label="Late by more than, s" errors=${errors}>${input("alerts.late_seconds", { inputmode: "numeric" })}<//>
        <${Field} field="alerts.running_seconds" label="Running longer than, s" errors=${errors}>${input("alerts.running_seconds", { inputmode: "numeric" })}<//>
      </div>
      <${Field} field="alerts.limited_seconds" label="Waiting on a limit more than, s" errors=${errors}
        hint="A run held back by a target limit or the job's max concurrent (alert kind limited)">
        ${input("alerts.limited_seconds", { inputmode: "numeric" })}<//>` : null}
  </fieldset>`;
}

/** A job's alerts as the API returns them, read-only (the job view). */
export function Alerts({ job }) {
  const alerts = job ? job.alerts : null;
  return html`<section class="alerts" aria-labelledby="alerts-title">
    <h3 id="alerts-title">Alerts</h3>
    ${alerts ? html`<${Json} value=${alerts} />` : html`<p class="muted">None (Edit to add some).</p>`}
  </section>`;
}
