// A job's audit trail: every change, who made it, when, why and what changed (each field's before
// and after), and a way back: restore an earlier revision's definition (a new revision).
import { useEffect, useState } from "preact/hooks";
import { Confirm, Json, Time, api, enc, html, query, useInterval } from "./lib.js";

// The actions that wrote the job (and so made a revision a version that can be restored).
const REVISING = ["created", "updated", "paused", "resumed", "cancelled", "restored"];

export function Changes({ job, version, notify, onRestored }) {
  const [cursors, setCursors] = useState([null]);
  const [page, setPage] = useState(null);
  const [error, setError] = useState(null);
  const [open, setOpen] = useState(null);
  const cursor = cursors[cursors.length - 1];

  async function load() {
    try {
      setPage(await api("GET", `/v1/jobs/${enc(job.job_id)}/changes${query({ limit: 20, cursor })}`));
      setError(null);
    } catch (failure) {
      setError(failure);
    }
  }
  useEffect(() => {
    load();
  }, [job.job_id, cursor, version, job.revision]);
  useInterval(load, 5000);

  async function restore(revision) {
    try {
      await api("POST", `/v1/jobs/${enc(job.job_id)}/restore`, { revision, note: `restored from the console` });
      notify(`Revision ${revision} restored`);
      onRestored();
    } catch (failure) {
      notify(failure.message, true);
    }
  }

  const key = (change) => `${change.revision}-${change.at}-${change.action}`;
  return html`<section aria-labelledby="changes-title" class="changes">
    <h3 id="changes-title">Changes</h3>
    ${error ? html`<p class="field-error" role="alert">${error.message}</p>` : null}
    ${page === null ? html`<p class="muted">Loading…</p>` : html`<div class="table-wrap"><table id="changes-table">
      <caption class="visually-hidden">Changes to the job, newest first</caption>
      <thead><tr><th scope="col">Revision</th><th scope="col">When</th><th scope="col">What</th>
        <th scope="col">By</th><th scope="col">Note</th><th scope="col">Changed</th></tr></thead>
      <tbody>
        ${page.items.map((change) => html`<tr key=${key(change)} class="change-row" data-action=${change.action}
            data-revision=${change.revision}>
          <td><button type="button" class="link" aria-expanded=${open === key(change)}
            onClick=${() => setOpen(open === key(change) ? null : key(change))}>${change.revision}</button></td>
          <td><${Time} iso=${change.at} ms=${true} /></td>
          <td>${change.action.replace("_", " ")}</td>
          <td class="mono small">${change.by}</td>
          <td>${change.note ? html`<q>${change.note}</q>` : null}</td>
          <td>${Object.keys(change.diff).join(", ") || Object.entries(change.details).map(([k, v]) => `${k} ${v}`).join(", ")}
            ${open === key(change) ? html`<div class="change-detail">
              ${Object.keys(change.diff).length ? html`<${Json} value=${change.diff} />` : null}
              ${REVISING.includes(change.action) && change.revision < job.revision ? html`<${Confirm}
                id=${`restore-${change.revision}`} label=${`Restore revision ${change.revision}`} danger=${false}
                question=${`Make revision ${change.revision}'s definition the job's again?`} confirmLabel="Restore"
                onConfirm=${() => restore(change.revision)} />` : null}
            </div>` : null}</td>
        </tr>`)}
      </tbody></table></div>
      <nav class="pager" aria-label="Pages of changes">
        <button type="button" disabled=${cursors.length === 1} onClick=${() => setCursors(cursors.slice(0, -1))}>Newer</button>
        <button type="button" disabled=${!page.next_cursor} onClick=${() => setCursors([...cursors, page.next_cursor])}>Older</button>
      </nav>`}
  </section>`;
}
