// Shared by every view: the html tag (htm over Preact: text is always escaped, there is no raw-HTML
// path in this app), the API client, the field errors, and the way times are shown.
import { h } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import htm from "htm";

export const html = htm.bind(h);

// ---------------------------------------------------------------------------------------- the API

const TOKEN_KEY = "punctual.token";

// The token lives in sessionStorage (gone with the tab) and only ever travels as a header.
export const session = {
  token: () => sessionStorage.getItem(TOKEN_KEY),
  signIn: (token) => sessionStorage.setItem(TOKEN_KEY, token),
  signOut: () => sessionStorage.removeItem(TOKEN_KEY),
};

export class ApiError extends Error {
  constructor(status, body) {
    const data = body && typeof body === "object" ? body : { reason: String(body || "") };
    const reason = data.reason || data.message || data.error || `HTTP ${status}`;
    super(data.field ? `${data.field}: ${reason}` : reason);
    this.status = status;
    this.field = data.field || null;
    this.reason = reason;
    this.problems = Array.isArray(data.problems) ? data.problems : [];
    this.body = data; // the whole answer: a refusal may say more (a calendar's delete lists its jobs)
  }
}

const listeners = new Set();
/** Called with no argument when the API answers 401: the token is no longer good. */
export function onUnauthorized(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  const token = session.token();
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
    });
  } catch (error) {
    throw new ApiError(0, { reason: `cannot reach the API (${error.message})` });
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { reason: text.slice(0, 200) };
  }
  if (!response.ok) {
    if (response.status === 401) listeners.forEach((listener) => listener());
    throw new ApiError(response.status, data);
  }
  return data;
}

export const enc = encodeURIComponent;

export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(key, value);
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

// ---------------------------------------------------------------------------------- field errors

/**
 * The API names the input that was wrong (`schedule.cron`, `target.headers.X-Team`, `retry`): file
 * the error under the closest field the form shows, else under "form" (shown at its top).
 */
export function errorsFrom(error, knownFields) {
  const errors = {};
  const problems = error.problems.length ? error.problems : [{ field: error.field, reason: error.reason }];
  for (const problem of problems) {
    let field = problem.field || "";
    while (field && !knownFields.includes(field)) {
      field = field.includes(".") ? field.slice(0, field.lastIndexOf(".")) : "";
    }
    const key = field || "form";
    const text = key === "form" && problem.field ? `${problem.field}: ${problem.reason}` : problem.reason;
    errors[key] = errors[key] ? `${errors[key]}; ${text}` : text;
  }
  return errors;
}

export const fieldId = (field) => `f-${field.replace(/[^A-Za-z0-9_-]/g, "-")}`;
export const errorId = (field) => `err-${field.replace(/[^A-Za-z0-9_-]/g, "-")}`;

export function FieldError({ errors, field }) {
  const text = errors && errors[field];
  if (!text) return null;
  return html`<p class="field-error" id=${errorId(field)} role="alert">${text}</p>`;
}

/** The attributes that tie an input to its label and its error. */
export function fieldProps(field, errors) {
  const invalid = Boolean(errors && errors[field]);
  return {
    id: fieldId(field),
    name: field,
    "data-field": field,
    "aria-invalid": invalid ? "true" : undefined,
    "aria-describedby": invalid ? errorId(field) : undefined,
  };
}

// ----------------------------------------------------------------------------------------- times

const pad = (n, width = 2) => String(n).padStart(width, "0");

/** An ISO instant in the browser's zone: 2026-11-22 14:00:05 (and .123 when it has milliseconds). */
export function localTime(iso, withMs = false) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  const text =
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  return withMs ? `${text}.${pad(date.getMilliseconds(), 3)}` : text;
}

export const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";

export function relative(iso, now = Date.now()) {
  const seconds = (new Date(iso).getTime() - now) / 1000;
  const size = Math.abs(seconds);
  const text =
    size < 60 ? `${Math.round(size)}s` : size < 3600 ? `${Math.round(size / 60)} min`
      : size < 86400 ? `${(size / 3600).toFixed(1)} h` : `${(size / 86400).toFixed(1)} d`;
  return seconds >= 0 ? `in ${text}` : `${text} ago`;
}

/** A time in the browser's zone, UTC on hover. */
export function Time({ iso, ms = false, rel = false }) {
  if (!iso) return html`<span class="none">–</span>`;
  return html`<time datetime=${iso} title=${`UTC ${iso}`}>${localTime(iso, ms)}${rel
    ? html` <span class="rel">(${relative(iso)})</span>` : null}</time>`;
}

export function millis(ms) {
  if (ms === null || ms === undefined) return "–";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120000) return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  return `${(ms / 60000).toFixed(1)} min`;
}

// ------------------------------------------------------------------------------- schedule in words

const UNITS = { second: "s", seconds: "s", minute: "min", minutes: "min", hour: "h", hours: "h", day: "d", days: "d" };

export function cronDialect(expression) {
  const text = (expression || "").trim();
  if (/^cron\(/i.test(text)) return "EventBridge cron (minutes hours day-of-month month day-of-week year)";
  const fields = text.split(/\s+/).filter(Boolean).length;
  if (fields === 6) return "Unix cron with a leading seconds field";
  if (fields === 5) return "Unix cron (minute hour day-of-month month day-of-week)";
  return "Unix (5 fields), with seconds (6 fields), or EventBridge cron(…)";
}

export function scheduleWords(schedule) {
  if (!schedule) return "";
  const words = scheduleOnlyWords(schedule);
  if (!schedule.calendar) return words;
  const fate = { next_business_day: "moved to the next business day", previous_business_day: "moved to the previous business day" }[
    schedule.on_excluded] || "skipped";
  return `${words}; calendar ${schedule.calendar}: excluded days ${fate}`;
}

function scheduleOnlyWords(schedule) {
  const zone = schedule.timezone && schedule.timezone !== "UTC" ? ` (${schedule.timezone})` : "";
  if (schedule.at) return `once at ${localTime(schedule.at)}`;
  if (schedule.rate) {
    const match = /^(?:rate\()?\s*(\d+)\s+(\w+?)\s*\)?$/i.exec(schedule.rate.trim());
    if (match) return `every ${match[1]} ${UNITS[match[2].toLowerCase()] || match[2]}`;
    return `rate ${schedule.rate}`;
  }
  if (schedule.cron) {
    const fields = schedule.cron.trim().split(/\s+/);
    const every = /^\*\/(\d+)$/;
    if (fields.length === 6 && every.test(fields[0]) && fields.slice(1).every((f) => f === "*")) {
      return `every ${every.exec(fields[0])[1]} s${zone}`;
    }
    if (fields.length === 5 && every.test(fields[0]) && fields.slice(1).every((f) => f === "*")) {
      return `every ${every.exec(fields[0])[1]} min${zone}`;
    }
    if (fields.length === 5 && /^\d+$/.test(fields[0]) && /^\d+$/.test(fields[1])) {
      const days = fields[2] === "*" && fields[3] === "*"
        ? { "*": "daily", "1-5": "weekdays", "MON-FRI": "weekdays" }[fields[4]] : null;
      if (days) return `${days} at ${pad(fields[1])}:${pad(fields[0])}${zone}`;
    }
    return `cron ${schedule.cron}${zone}`;
  }
  return JSON.stringify(schedule);
}

/** "in 30s", "in 5 minutes", "in 2h": an ISO instant (as the CLI's --at); anything else as written. */
export function resolveWhen(text, now = Date.now()) {
  const match = /^in\s+(\d+)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hours?|d|days?)$/i.exec(text.trim());
  if (!match) return text.trim();
  const unit = { s: 1, m: 60, h: 3600, d: 86400 }[match[2][0].toLowerCase()];
  return new Date(now + Number(match[1]) * unit * 1000).toISOString();
}

// -------------------------------------------------------------------------------------- helpers

/** Calls `tick` now and every `ms` while `enabled`; the latest `tick` is always the one called. */
export function useInterval(tick, ms, enabled = true) {
  const latest = useRef(tick);
  latest.current = tick;
  useEffect(() => {
    if (!enabled) return undefined;
    const timer = setInterval(() => latest.current(), ms);
    return () => clearInterval(timer);
  }, [ms, enabled]);
}

export const FINISHED_RUN = ["SUCCEEDED", "FAILED", "CANCELLED", "SKIPPED"];
export const JOB_STATUSES = ["ACTIVE", "PAUSED", "COMPLETED", "FAILED", "CANCELLED"];
export const RUN_STATUSES = ["SCHEDULED", "QUEUED", "RUNNING", "RETRYING", "SUCCEEDED", "FAILED", "CANCELLED", "SKIPPED"];

export function Status({ value }) {
  return html`<span class=${`status status-${String(value).toLowerCase()}`}>${value}</span>`;
}

export function Json({ value }) {
  return html`<pre class="json">${JSON.stringify(value, null, 2)}</pre>`;
}

/** Does what it is asked only after a second, explicit click (for what cannot be undone). */
export function Confirm({ label, question, confirmLabel, onConfirm, danger = true, id }) {
  const [asking, setAsking] = useState(false);
  const yes = useRef(null);
  useEffect(() => {
    if (asking && yes.current) yes.current.focus();
  }, [asking]);
  if (!asking) {
    return html`<button type="button" id=${id} class=${danger ? "danger" : ""} onClick=${() => setAsking(true)}>${label}</button>`;
  }
  return html`<span class="confirm" role="group" aria-label=${question}>
    <span>${question}</span>
    <button type="button" ref=${yes} id=${id ? `${id}-yes` : undefined} class=${danger ? "danger" : ""}
      onClick=${() => { setAsking(false); onConfirm(); }}>${confirmLabel}</button>
    <button type="button" onClick=${() => setAsking(false)}>Keep it</button>
  </span>`;
}
