// Business calendars (docs/api.md "Calendars"): the caller's calendars (GET /v1/calendars), one
// calendar's rules and the days it excludes over the next 12 months (GET .../days), the editor
// (POST /v1/calendars, PUT /v1/calendars/{name}) and delete (DELETE; a 409 names the jobs using it).
import { useEffect, useMemo, useState } from "preact/hooks";
import { ApiError, Confirm, FieldError, api, enc, fieldProps, html, query } from "./lib.js";

export const WEEKDAYS = [
  [1, "Mon", "Monday"], [2, "Tue", "Tuesday"], [3, "Wed", "Wednesday"], [4, "Thu", "Thursday"],
  [5, "Fri", "Friday"], [6, "Sat", "Saturday"], [7, "Sun", "Sunday"],
];

/** The working weekdays in words: "Monday to Friday", or the days listed. */
export function weekdaysWords(days) {
  const sorted = [...(days || [])].sort();
  if (sorted.join() === "1,2,3,4,5") return "Monday to Friday";
  if (sorted.join() === "1,2,3,4,5,6,7") return "every day";
  return sorted.map((day) => (WEEKDAYS.find(([n]) => n === day) || [day, String(day)])[1]).join(", ");
}

export const holidayWords = (source) => (source.subdivision ? `${source.country}-${source.subdivision}` : source.country);

/** The caller's calendars: null while loading, [] if none (or the list could not be read). */
export function useCalendars() {
  const [calendars, setCalendars] = useState(null);
  useEffect(() => {
    let stale = false;
    api("GET", "/v1/calendars").then(
      (page) => !stale && setCalendars(page.items),
      () => !stale && setCalendars([]),
    );
    return () => {
      stale = true;
    };
  }, []);
  return calendars;
}

// ------------------------------------------------------------------------------------ the list

export function CalendarsList() {
  const [page, setPage] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    api("GET", "/v1/calendars").then(setPage, setError);
  }, []);
  const none = html`<span class="none">–</span>`;
  return html`<section aria-labelledby="calendars-title">
    <div class="title-row">
      <h2 id="calendars-title">Calendars</h2>
      <a class="button primary" href="#/new-calendar" id="new-calendar">New calendar</a>
    </div>
    <p class="muted">Business calendars: a cron or rate schedule that follows one skips the days it excludes,
      or moves their fire times to the next or previous business day (the job form's <i>Calendar</i>).</p>
    ${error ? html`<p class="field-error" role="alert">${error.message}</p>` : null}
    ${page === null ? (error ? null : html`<p class="muted">Loading…</p>`) : html`<div class="table-wrap">
      <table id="calendars-table">
        <caption class="visually-hidden">Your calendars, by name</caption>
        <thead><tr><th scope="col">Name</th><th scope="col">Time zone</th><th scope="col">Working days</th>
          <th scope="col">Holidays</th><th scope="col">Exchanges</th><th scope="col">Dates</th>
          <th scope="col">Yearly</th><th scope="col">Version</th></tr></thead>
        <tbody>
          ${page.items.length === 0 ? html`<tr><td colspan="8" class="muted">No calendars yet: create one.</td></tr>` : null}
          ${page.items.map((calendar) => html`<tr key=${calendar.name} data-calendar=${calendar.name}>
            <td><a href=${`#/calendars/${enc(calendar.name)}`} class="calendar-link">${calendar.name}</a></td>
            <td>${calendar.timezone}</td>
            <td>${weekdaysWords(calendar.weekdays)}</td>
            <td>${calendar.holidays.length ? calendar.holidays.map((s) => html`<span class="tag">${holidayWords(s)}</span> `) : none}</td>
            <td>${calendar.exchanges.length ? calendar.exchanges.map((code) => html`<span class="tag">${code}</span> `) : none}</td>
            <td>${calendar.dates.length || none}</td>
            <td>${calendar.yearly.length || none}</td>
            <td>${calendar.version}</td>
          </tr>`)}
        </tbody>
      </table></div>`}
  </section>`;
}

// --------------------------------------------------------------------------------- one calendar

/** Today in the calendar's zone, YYYY-MM-DD (as the API judges a day). */
function todayIn(zone) {
  try {
    return new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" })
      .format(new Date());
  } catch {
    return new Date().toISOString().slice(0, 10);
  }
}

/** The day before the same date a year on: 12 months, both ends included. */
function yearOn(day) {
  const date = new Date(`${day}T00:00:00Z`);
  date.setUTCFullYear(date.getUTCFullYear() + 1);
  date.setUTCDate(date.getUTCDate() - 1);
  return date.toISOString().slice(0, 10);
}

const monthName = (month) => new Date(`${month}-01T00:00:00Z`)
  .toLocaleDateString("en-US", { month: "long", year: "numeric", timeZone: "UTC" });
const weekdayOf = (day) => new Date(`${day}T00:00:00Z`).toLocaleDateString("en-US", { weekday: "short", timeZone: "UTC" });
// The reason the API gives a day that is off every week ("not a working day (Saturday)").
const weekly = (reason) => reason.startsWith("not a working day");

export function CalendarView({ name, notify }) {
  const [calendar, setCalendar] = useState(null);
  const [error, setError] = useState(null);
  const [inUse, setInUse] = useState(null);
  useEffect(() => {
    api("GET", `/v1/calendars/${enc(name)}`).then(setCalendar, setError);
  }, [name]);

  const remove = async () => {
    try {
      await api("DELETE", `/v1/calendars/${enc(name)}`);
      notify(`Calendar ${name} deleted.`);
      location.hash = "#/calendars";
    } catch (failure) {
      if (failure instanceof ApiError && failure.status === 409 && Array.isArray(failure.body.jobs)) {
        setInUse(failure.body);
      } else {
        notify(failure.message, true);
      }
    }
  };

  if (error && !calendar) return html`<p class="field-error" role="alert">${error.message}</p>`;
  if (!calendar) return html`<p class="muted">Loading…</p>`;
  return html`<article aria-labelledby="calendar-title">
    <div class="title-row">
      <h2 id="calendar-title">${calendar.name}</h2>
      <span class="muted">calendar, version ${calendar.version}</span>
    </div>
    <div class="buttons job-actions" role="toolbar" aria-label="Calendar actions">
      <a class="button" href=${`#/calendars/${enc(calendar.name)}/edit`} id="edit-calendar">Edit</a>
      <${Confirm} id="delete-calendar" label="Delete calendar" question="Delete this calendar? This cannot be undone."
        confirmLabel="Yes, delete it" onConfirm=${remove} />
      <a href="#/calendars">All calendars</a>
    </div>
    ${inUse ? html`<div class="in-use" id="calendar-in-use" role="alert">
      <p class="field-error">${inUse.reason}</p>
      <ul>${inUse.jobs.map((job) => html`<li><a href=${`#/jobs/${job.job_id}`}>${job.name || job.job_id}</a>
        <span class="muted small"> ${job.status}${job.name ? html` · <span class="mono">${job.job_id}</span>` : null}</span></li>`)}</ul>
      ${inUse.job_count > inUse.jobs.length ? html`<p class="muted">and ${inUse.job_count - inUse.jobs.length} more</p>` : null}
    </div>` : null}
    <div class="columns">
      <section aria-labelledby="rules-title">
        <h3 id="rules-title">Rules</h3>
        <${Rules} calendar=${calendar} />
      </section>
      <${ExcludedDays} calendar=${calendar} />
    </div>
  </article>`;
}

function Rules({ calendar }) {
  const list = (items) => (items.length ? items.map((item) => html`<span class="tag">${item}</span> `) : "none");
  return html`<dl class="definition" id="calendar-rules">
    <dt>Time zone</dt><dd>${calendar.timezone} <span class="muted small">(in which a day is judged)</span></dd>
    <dt>Working days</dt><dd>${weekdaysWords(calendar.weekdays)}</dd>
    <dt>Public holidays of</dt><dd>${list(calendar.holidays.map(holidayWords))}</dd>
    <dt>Exchanges closed</dt><dd>${list(calendar.exchanges)}${calendar.expanded_until
      ? html` <span class="muted small">(known until ${calendar.expanded_until})</span>` : null}</dd>
    <dt>Dates</dt><dd>${list(calendar.dates)}</dd>
    <dt>Every year</dt><dd>${list(calendar.yearly)}</dd>
  </dl>`;
}

function ExcludedDays({ calendar }) {
  const [answer, setAnswer] = useState(null);
  const [error, setError] = useState(null);
  const [everyWeek, setEveryWeek] = useState(false);
  const from = todayIn(calendar.timezone);
  const to = yearOn(from);
  useEffect(() => {
    api("GET", `/v1/calendars/${enc(calendar.name)}/days${query({ from, to })}`).then(setAnswer, setError);
  }, [calendar.name, calendar.version, from]);

  const months = useMemo(() => {
    const grouped = new Map();
    for (const day of answer ? answer.excluded : []) {
      const month = day.date.slice(0, 7);
      if (!grouped.has(month)) grouped.set(month, []);
      grouped.get(month).push(day);
    }
    return [...grouped.entries()];
  }, [answer]);

  const weeklyCount = answer ? answer.excluded.filter((day) => weekly(day.reason)).length : 0;
  return html`<section aria-labelledby="days-title" id="excluded-days">
    <h3 id="days-title">Excluded days, ${from} to ${to}</h3>
    <label class="check"><input type="checkbox" id="show-weekly" checked=${everyWeek}
      onChange=${(event) => setEveryWeek(event.currentTarget.checked)} /> also the days off every week
      (${weeklyCount})</label>
    ${error ? html`<p class="field-error" role="alert">${error.message}</p>` : null}
    ${!answer ? (error ? null : html`<p class="muted">Loading…</p>`) : months.map(([month, days]) => {
      const shown = everyWeek ? days : days.filter((day) => !weekly(day.reason));
      const hidden = days.length - shown.length;
      return html`<div class="month" data-month=${month}>
        <h4>${monthName(month)} <span class="muted small">${days.length} day(s)${hidden ? `, ${hidden} off every week` : ""}</span></h4>
        ${shown.length ? html`<ul class="days">${shown.map((day) => html`<li data-date=${day.date}>
          <time datetime=${day.date}>${day.date}</time> <span class="muted">${weekdayOf(day.date)}</span> · <span
            class="reason">${day.reason}</span></li>`)}</ul>` : null}
      </div>`;
    })}
    ${answer && answer.excluded.length === 0 ? html`<p class="muted">No day is excluded: every day is a business day.</p>` : null}
  </section>`;
}

// ---------------------------------------------------------------------------------- the editor

const words = (text) => text.split(/[\s,;]+/).map((word) => word.trim()).filter(Boolean);

function stateOf(calendar) {
  if (!calendar) {
    return { name: "", timezone: "UTC", weekdays: [1, 2, 3, 4, 5], holidays: [{ country: "", subdivision: "" }],
      exchanges: "", dates: "", yearly: "" };
  }
  return {
    name: calendar.name,
    timezone: calendar.timezone,
    weekdays: [...calendar.weekdays],
    holidays: calendar.holidays.length
      ? calendar.holidays.map((s) => ({ country: s.country, subdivision: s.subdivision || "" }))
      : [{ country: "", subdivision: "" }],
    exchanges: calendar.exchanges.join(", "),
    dates: calendar.dates.join("\n"),
    yearly: calendar.yearly.join("\n"),
  };
}

/**
 * The API names the rule it refused: `holidays[1]` (or pydantic's `holidays.1.HolidaySourceIn.country`),
 * `dates[0]`, `weekdays`, `timezone`. A holiday source's error goes to its row (rows left empty are not
 * sent: `rows` maps the index sent to the row shown); a list's to its field.
 */
function calendarErrors(error, rows) {
  const problems = error.problems.length ? error.problems : [{ field: error.field, reason: error.reason }];
  const errors = {};
  for (const problem of problems) {
    const field = (problem.field || "").replace(/\.(\d+)(?=\.|$)/g, "[$1]");
    const item = /^(holidays|weekdays|exchanges|dates|yearly)(?:\[(\d+)\])?/.exec(field);
    let key = "form";
    if (item && item[1] === "holidays") key = item[2] !== undefined && rows[Number(item[2])] !== undefined ? `holidays[${rows[Number(item[2])]}]` : "holidays";
    else if (item) key = item[1];
    else if (field === "name" || field === "timezone") key = field;
    if (errors[key]) continue; // the first reason is the one that reads (a union's others repeat it)
    errors[key] = key === "form" && problem.field ? `${problem.field}: ${problem.reason}` : problem.reason;
  }
  return errors;
}

export function CalendarEditor({ name, notify }) {
  const editing = Boolean(name);
  const [calendar, setCalendar] = useState(editing ? null : undefined);
  const [loadError, setLoadError] = useState(null);
  useEffect(() => {
    if (editing) api("GET", `/v1/calendars/${enc(name)}`).then(setCalendar, setLoadError);
  }, [name]);
  if (loadError) return html`<p class="field-error" role="alert">${loadError.message}</p>`;
  if (calendar === null) return html`<p class="muted">Loading…</p>`;
  return html`<${CalendarForm} key=${name || ""} calendar=${calendar} notify=${notify} />`;
}

function CalendarForm({ calendar, notify }) {
  const editing = Boolean(calendar);
  const [state, setState] = useState(() => stateOf(calendar));
  const [errors, setErrors] = useState({});
  const [busy, setBusy] = useState(false);
  const setText = (field) => (event) => {
    const value = event.currentTarget.value;
    setState((old) => ({ ...old, [field]: value }));
  };
  const toggleDay = (day) => (event) => {
    const on = event.currentTarget.checked;
    setState((old) => ({ ...old, weekdays: on ? [...new Set([...old.weekdays, day])].sort() : old.weekdays.filter((d) => d !== day) }));
  };
  const setHoliday = (index, part) => (event) => {
    const value = event.currentTarget.value;
    setState((old) => ({ ...old, holidays: old.holidays.map((row, i) => (i === index ? { ...row, [part]: value } : row)) }));
  };
  const addHoliday = () => setState((old) => ({ ...old, holidays: [...old.holidays, { country: "", subdivision: "" }] }));
  const removeHoliday = (index) => {
    setState((old) => ({ ...old, holidays: old.holidays.filter((_row, i) => i !== index) }));
    setErrors({});
  };

  async function submit(event) {
    event.preventDefault();
    setErrors({});
    const rows = [];
    const holidays = [];
    state.holidays.forEach((row, index) => {
      if (!row.country.trim() && !row.subdivision.trim()) return;
      rows.push(index);
      const source = { country: row.country.trim() };
      if (row.subdivision.trim()) source.subdivision = row.subdivision.trim();
      holidays.push(source);
    });
    const rules = {
      timezone: state.timezone.trim(),
      weekdays: [...state.weekdays].sort(),
      holidays,
      exchanges: words(state.exchanges),
      dates: words(state.dates),
      yearly: words(state.yearly),
    };
    setBusy(true);
    try {
      const answer = editing
        ? await api("PUT", `/v1/calendars/${enc(calendar.name)}`, rules)
        : await api("POST", "/v1/calendars", { name: state.name.trim(), ...rules });
      notify(editing ? `Calendar ${answer.name} saved (version ${answer.version}).` : `Calendar ${answer.name} created.`);
      location.hash = `#/calendars/${enc(answer.name)}`;
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      const found = calendarErrors(error, rows);
      setErrors(found);
      const first = Object.keys(found).find((field) => field !== "form");
      const element = first && document.querySelector(`[data-field="${CSS.escape(first)}"]`);
      if (element) element.focus();
    } finally {
      setBusy(false);
    }
  }

  const text = (field, extra = {}) => html`<input ...${fieldProps(field, errors)} value=${state[field]}
    onInput=${setText(field)} autocomplete="off" spellcheck=${false} ...${extra} />`;
  const area = (field, placeholder) => html`<textarea ...${fieldProps(field, errors)} rows="3" class="mono"
    value=${state[field]} onInput=${setText(field)} spellcheck=${false} placeholder=${placeholder}></textarea>`;
  return html`<form class="calendar-form" onSubmit=${submit} novalidate
      aria-label=${editing ? "Change the calendar" : "Create a calendar"}>
    <h2>${editing ? `Change calendar ${calendar.name}` : "Create a calendar"}</h2>
    ${errors.form ? html`<p class="field-error" id="err-form" role="alert">${errors.form}</p>` : null}
    <div class="columns">
    <fieldset>
      <legend>Calendar</legend>
      ${editing ? null : html`<div class="field"><label for="f-name">Name</label>${text("name")}
        <p class="hint">Unique among your calendars: letters, digits and ._:- (a job names it in its schedule)</p>
        <${FieldError} errors=${errors} field="name" /></div>`}
      <div class="field"><label for="f-timezone">Time zone</label>${text("timezone", { list: "calendar-zones" })}
        <p class="hint">IANA name: a day is a business day or not as this zone sees it</p>
        <${FieldError} errors=${errors} field="timezone" /></div>
      <datalist id="calendar-zones">${(Intl.supportedValuesOf ? Intl.supportedValuesOf("timeZone") : ["UTC"])
        .map((zone) => html`<option value=${zone}></option>`)}</datalist>
      <fieldset class="weekdays" aria-describedby=${errors.weekdays ? "err-weekdays" : undefined}>
        <legend>Working days</legend>
        <div class="radios">${WEEKDAYS.map(([day, short, long]) => html`<label class="check" title=${long}>
          <input type="checkbox" id=${`f-weekday-${day}`} data-field=${day === 1 ? "weekdays" : undefined}
            checked=${state.weekdays.includes(day)} onChange=${toggleDay(day)} /> ${short}</label>`)}</div>
        <${FieldError} errors=${errors} field="weekdays" />
      </fieldset>
    </fieldset>
    <fieldset>
      <legend>Days off</legend>
      <div class="field" role="group" aria-labelledby="holidays-label">
        <span class="label" id="holidays-label">Public holidays of (country, and a subdivision if any)</span>
        ${state.holidays.map((row, index) => {
          const key = `holidays[${index}]`;
          const props = fieldProps(key, errors);
          return html`<div class="holiday-row">
            <div class="pair">
              <input ...${props} id=${`f-holidays-${index}-country`} value=${row.country} onInput=${setHoliday(index, "country")}
                aria-label=${`Holiday source ${index + 1}: country (ISO code, e.g. DE)`} placeholder="country: DE" autocomplete="off" />
              <input id=${`f-holidays-${index}-subdivision`} value=${row.subdivision} onInput=${setHoliday(index, "subdivision")}
                aria-label=${`Holiday source ${index + 1}: subdivision (optional, e.g. BY)`} placeholder="subdivision: BY (optional)"
                aria-invalid=${props["aria-invalid"]} aria-describedby=${props["aria-describedby"]} autocomplete="off" />
            </div>
            <button type="button" class="link small" onClick=${() => removeHoliday(index)}
              aria-label=${`Remove holiday source ${index + 1}`}>remove</button>
            <${FieldError} errors=${errors} field=${key} />
          </div>`;
        })}
        <button type="button" id="add-holiday" onClick=${addHoliday}>Add a holiday source</button>
        <p class="hint">From the <code>holidays</code> package: DE with BY is Bavaria, GB with SCT Scotland, US with NY New York</p>
        <${FieldError} errors=${errors} field="holidays" />
      </div>
      <div class="field"><label for="f-exchanges">Exchanges (MIC codes; their closed days are excluded)</label>
        ${text("exchanges", { placeholder: "XNYS, XLON" })}
        <${FieldError} errors=${errors} field="exchanges" /></div>
      <div class="field"><label for="f-dates">Dates (YYYY-MM-DD, one a line)</label>${area("dates", "2026-12-24")}
        <${FieldError} errors=${errors} field="dates" /></div>
      <div class="field"><label for="f-yearly">Every year (MM-DD, one a line)</label>${area("yearly", "12-31")}
        <${FieldError} errors=${errors} field="yearly" /></div>
    </fieldset>
    </div>
    <div class="actions">
      <button type="submit" class="primary" id="save-calendar" disabled=${busy}>${editing ? "Save changes" : "Create calendar"}</button>
      <a class="button" href=${editing ? `#/calendars/${enc(calendar.name)}` : "#/calendars"}>Cancel</a>
    </div>
  </form>`;
}
