// The Punctual console: sign-in, navigation (hash routes), notices; the views are in their modules.
import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, FieldError, api, fieldProps, html, onUnauthorized, session } from "./lib.js";
import { CalendarEditor, CalendarView, CalendarsList } from "./calendars.js";
import { JobForm } from "./form.js";
import { LimitEditor, LimitView, LimitsList } from "./limits.js";
import { JobsList } from "./jobs.js";
import { JobView } from "./job.js";
import { SystemView } from "./system.js";

const LOCAL_TOKEN = "local-dev-token";

function route(hash) {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "new") return { view: "new" };
  if (parts[0] === "system") return { view: "system" };
  if (parts[0] === "new-calendar") return { view: "calendar-edit" };
  if (parts[0] === "calendars" && parts[1]) {
    return { view: parts[2] === "edit" ? "calendar-edit" : "calendar", calendar: parts[1] };
  }
  if (parts[0] === "calendars") return { view: "calendars" };
  if (parts[0] === "new-limit") return { view: "limit-edit" };
  if (parts[0] === "limits" && parts[1]) return { view: parts[2] === "edit" ? "limit-edit" : "limit", limit: parts[1] };
  if (parts[0] === "limits") return { view: "limits" };
  if (parts[0] === "jobs" && parts[1]) {
    return { view: "job", jobId: parts[1], editing: parts[2] === "edit", runId: parts[2] === "runs" ? parts[3] : undefined };
  }
  return { view: "jobs" };
}

function useHash() {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return hash;
}

/**
 * `punctual console` (a local server that signs for a deployed API) answers /console/session with a
 * token of its own for this page; the local stack answers 204 (no session), and the page asks for a
 * token.
 */
async function proxySession() {
  try {
    const response = await fetch("/console/session", { cache: "no-store", credentials: "omit" });
    if (response.status !== 200) return null;
    return await response.json();
  } catch {
    return null;
  }
}

function SignIn({ onSignedIn }) {
  const [token, setToken] = useState(LOCAL_TOKEN);
  const [errors, setErrors] = useState({});
  const field = useRef(null);
  useEffect(() => field.current && field.current.focus(), []);
  const submit = async (event) => {
    event.preventDefault();
    session.signIn(token.trim());
    try {
      await api("GET", "/v1/stats");
      onSignedIn();
    } catch (error) {
      session.signOut();
      setErrors({ token: error instanceof ApiError ? error.reason : String(error) });
    }
  };
  return html`<form class="sign-in" onSubmit=${submit} aria-labelledby="sign-in-title">
    <h2 id="sign-in-title">Sign in</h2>
    <p>The console calls the Punctual API (<code>/v1</code>) with your bearer token, kept in this tab's
      session storage only. The local stack's development token is filled in.</p>
    <div class="field"><label for="f-token">Bearer token</label>
      <input ...${fieldProps("token", errors)} ref=${field} type="password" autocomplete="off" value=${token}
        onInput=${(event) => setToken(event.currentTarget.value)} />
      <${FieldError} errors=${errors} field="token" /></div>
    <button type="submit" class="primary" id="sign-in">Sign in</button>
  </form>`;
}

function App() {
  const hash = useHash();
  const [signedIn, setSignedIn] = useState(Boolean(session.token()));
  const [proxy, setProxy] = useState(undefined); // undefined: not asked yet; null: no proxy
  const [notice, setNotice] = useState(null);
  const main = useRef(null);
  const proxied = useRef(false);

  useEffect(() => {
    proxySession().then((found) => {
      proxied.current = Boolean(found);
      if (found && found.token) {
        session.signIn(found.token);
        setSignedIn(true);
      }
      setProxy(found);
    });
    return onUnauthorized(() => {
      if (!proxied.current) {
        session.signOut();
        setSignedIn(false);
      }
    });
  }, []);
  // A new view: its heading gets the focus, so keyboard and screen-reader users start there.
  useEffect(() => {
    const heading = main.current && main.current.querySelector("h2");
    if (heading) {
      heading.setAttribute("tabindex", "-1");
      heading.focus({ preventScroll: true });
    }
  }, [hash, signedIn]);

  const notify = (text, isError = false) => {
    setNotice({ text, isError, at: Date.now() });
  };
  useEffect(() => {
    if (!notice) return undefined;
    const timer = setTimeout(() => setNotice(null), 6000);
    return () => clearTimeout(timer);
  }, [notice]);

  if (proxy === undefined) return html`<p class="loading">Loading the console…</p>`;
  const current = route(hash);
  let view;
  if (!signedIn) view = html`<${SignIn} onSignedIn=${() => setSignedIn(true)} />`;
  else if (current.view === "new") {
    view = html`<${JobForm} notify=${notify}
      onDone=${(job) => { location.hash = job ? `#/jobs/${job.job_id}` : "#/jobs"; }} />`;
  } else if (current.view === "job") {
    // Keyed by the job: another job's view starts afresh, and an answer still on its way for the last
    // one (its refresh every 3 s) lands nowhere.
    view = html`<${JobView} key=${current.jobId} jobId=${current.jobId} editing=${current.editing} runId=${current.runId}
      notify=${notify} />`;
  } else if (current.view === "calendars") view = html`<${CalendarsList} />`;
  else if (current.view === "calendar") {
    view = html`<${CalendarView} key=${current.calendar} name=${current.calendar} notify=${notify} />`;
  } else if (current.view === "calendar-edit") {
    view = html`<${CalendarEditor} key=${current.calendar || ""} name=${current.calendar} notify=${notify} />`;
  } else if (current.view === "limits") view = html`<${LimitsList} />`;
  else if (current.view === "limit") {
    // Keyed by the limit: its refresh every 2 s stops with it.
    view = html`<${LimitView} key=${current.limit} name=${current.limit} notify=${notify} />`;
  } else if (current.view === "limit-edit") {
    view = html`<${LimitEditor} key=${current.limit || ""} name=${current.limit} notify=${notify} />`;
  } else if (current.view === "system") view = html`<${SystemView} />`;
  else view = html`<${JobsList} notify=${notify} />`;

  const link = (href, label, active) => html`<a href=${href} aria-current=${active ? "page" : undefined}>${label}</a>`;
  return html`<a class="skip" href="#main" onClick=${(e) => { e.preventDefault(); main.current.focus(); }}>Skip to content</a>
    <header class="top">
      <h1><a href="#/jobs">Punctual</a></h1>
      ${signedIn ? html`<nav aria-label="Main">
        ${link("#/jobs", "Jobs", current.view === "jobs" || current.view === "job")}
        ${link("#/new", "New job", current.view === "new")}
        ${link("#/calendars", "Calendars", current.view.startsWith("calendar"))}
        ${link("#/limits", "Limits", current.view.startsWith("limit"))}
        ${link("#/system", "System", current.view === "system")}
      </nav>` : null}
      <div class="who">
        ${proxy ? html`<span title=${`Requests are forwarded by punctual console to ${proxy.endpoint}`}>
          via punctual console → ${proxy.endpoint} (${{ sigv4: "SigV4", api_key: "API key" }[proxy.auth] || "bearer"})</span>` : null}
        ${signedIn && !proxy ? html`<button type="button" class="link" id="sign-out"
          onClick=${() => { session.signOut(); setSignedIn(false); }}>Sign out</button>` : null}
      </div>
    </header>
    <div class="notice-area" aria-live="polite">${notice ? html`<p class=${notice.isError ? "notice error" : "notice"}
      id="notice">${notice.text}</p>` : null}</div>
    <main id="main" ref=${main} tabindex="-1">${view}</main>`;
}

render(html`<${App} />`, document.getElementById("app"));
