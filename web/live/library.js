// The library live view: a shelf of documents folded from one Tidings stream
// (each event is a whole version), plus an optional read-only shelf fed by an
// upstream resource. State lives here; library-view.js draws it.
//
// URL: /live/?stream=library&catalog=<uri>#token=<jwt>&doc=<shelf>:<path>

import { Tidings } from './tidings.js';
import { LibraryView, docHash } from './library-view.js';

const TOKEN_KEY = 'tidings.token';
const EDITOR_KEY = 'tidings.editor';
const ACTIVITY_MAX = 50;
const ID_RE = /^[a-z0-9-]+$/;

const query = new URLSearchParams(location.search);
const streamName = query.get('stream') || 'library';
const catalogUri = query.get('catalog') || null;

// Storage can throw (disabled cookies, some private modes); the page still
// works, it just forgets.
function stored(storage, key) {
  try {
    return storage.getItem(key);
  } catch {
    return null;
  }
}
function store(storage, key, value) {
  try {
    storage.setItem(key, value);
  } catch {
    /* not kept */
  }
}

const view = new LibraryView();

/** key "<shelf>:<path>" -> {shelf, path, title, body, cursor, editor} */
const docs = new Map();
const deletedBy = new Map(); // key -> editor of the deletion, for the "missing" line
let activity = []; // newest first
let openKey = null;
// The version loaded into the edit form, to tell the user's typing from
// versions that arrive meanwhile.
let form = null; // {key, title, body, cursor}
let pendingSave = null; // {key, title, body} while a save is on its way
let catalogNote = null;
const flashes = new Set();

const client = new Tidings({ base: '', token: () => stored(sessionStorage, TOKEN_KEY) });
window.tidingsLibrary = { client, docs };

// ---- small helpers ----------------------------------------------------------

const text = (v) => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));
const shelfOf = (key) => key.slice(0, key.indexOf(':'));

// Whether cursor a is a later version than b. Another epoch means the stream
// was started over, so its versions count as newer.
function isNewer(a, b) {
  if (!b) return true;
  const [ea, sa] = a.split(':');
  const [eb, sb] = b.split(':');
  return ea !== eb || Number(sa) > Number(sb);
}

function editorName() {
  const input = document.querySelector('[data-testid="editor-name"]');
  return input.value.trim() || input.placeholder;
}

function setupEditorName() {
  const input = document.querySelector('[data-testid="editor-name"]');
  let name = stored(localStorage, EDITOR_KEY);
  if (!name) {
    const bytes = crypto.getRandomValues(new Uint8Array(4));
    name = 'reader-' + [...bytes].map((b) => 'abcdefghijklmnopqrstuvwxyz0123456789'[b % 36]).join('');
    store(localStorage, EDITOR_KEY, name);
  }
  input.value = name;
  input.placeholder = name;
  input.addEventListener('input', () => store(localStorage, EDITOR_KEY, editorName()));
}

// ---- rendering, coalesced: a replay of thousands of events draws once -------

let renderPending = false;
function scheduleRender() {
  if (renderPending) return;
  renderPending = true;
  requestAnimationFrame(render);
  // rAF does not run in a background tab; the state should still be current
  // when the user comes back.
  setTimeout(render, 100);
}

function render() {
  if (!renderPending) return;
  renderPending = false;
  view.showCursor(Object.values(client.cursors()).join(','));
  const shelves = [{ shelf: 'library', docs: [] }];
  if (catalogUri) shelves.push({ shelf: 'catalog', docs: [], note: catalogNote });
  for (const [key, doc] of docs) shelves.find((s) => s.shelf === doc.shelf)?.docs.push({ key, ...doc });
  view.renderList(shelves, openKey);
  renderOpenDoc();
  view.renderActivity(activity);
  for (const key of flashes) view.flash(key, key === openKey);
  flashes.clear();
}

function renderOpenDoc() {
  if (openKey === null) return view.renderDoc(null, null);
  const doc = docs.get(openKey) ?? null;
  let missingText = 'This document does not exist (yet).';
  if (deletedBy.has(openKey)) missingText = `This document was deleted by ${deletedBy.get(openKey) || 'someone'}.`;
  else if (client.state !== 'live') missingText = 'Loading…';
  const readOnlyText =
    shelfOf(openKey) === 'library'
      ? null
      : shelfOf(openKey) === 'catalog'
        ? `Read-only: this document comes from the upstream resource ${catalogUri ?? ''}.`
        : 'Read-only: unknown shelf.';
  view.renderDoc(openKey, doc, { missingText, readOnlyText });
}

// ---- the model: documents, the edit form, recent changes --------------------

function upsert(doc, info) {
  const key = `${doc.shelf}:${doc.path}`;
  docs.set(key, doc);
  deletedBy.delete(key);
  if (key === openKey) reconcileForm(doc);
  if (!info.replay) flashes.add(key);
  scheduleRender();
}

function remove(key, editor, info) {
  if (!docs.delete(key)) return;
  deletedBy.set(key, editor);
  if (key === openKey && formIsDirty()) view.showConflict(editor, true);
  if (!info.replay) flashes.add(key);
  scheduleRender();
}

function dropShelf(shelf) {
  for (const key of [...docs.keys()]) if (shelfOf(key) === shelf) docs.delete(key);
  for (const key of [...deletedBy.keys()]) if (shelfOf(key) === shelf) deletedBy.delete(key);
  scheduleRender();
}

function addActivity(event, shelf, editor) {
  activity.unshift({ ...event, shelf, editor: text(editor), key: `${shelf}:${event.path}` });
  if (activity.length > ACTIVITY_MAX) activity.length = ACTIVITY_MAX;
  scheduleRender();
}

function formIsDirty() {
  if (!form) return false;
  const v = view.formValues();
  return v.title !== form.title || v.body !== form.body;
}

function loadForm(key, doc) {
  form = { key, title: doc?.title ?? '', body: doc?.body ?? '', cursor: doc?.cursor ?? null };
  view.fillForm(form.title, form.body);
  view.hideConflict();
}

// A new version of the open document: keep the form in step unless the user
// is typing there, in which case say so instead of overwriting their text.
function reconcileForm(doc) {
  if (!form || form.key !== openKey) return;
  // An older version being replayed after a reset is not news.
  if (form.cursor && !isNewer(doc.cursor, form.cursor)) return;
  const v = view.formValues();
  const same = (x) => x && x.title === doc.title && x.body === doc.body;
  if (!formIsDirty()) return loadForm(openKey, doc);
  // What the form holds already (typically our own save): nothing to resolve.
  if (same(v) || (same(pendingSave) && pendingSave.key === openKey)) {
    form = { key: openKey, title: doc.title, body: doc.body, cursor: doc.cursor };
    if (same(v)) view.hideConflict();
    return;
  }
  view.showConflict(doc.editor, false, () => loadForm(openKey, docs.get(openKey)));
}

function openDoc(key) {
  if (key === openKey) return;
  openKey = key;
  view.setSaveStatus('');
  if (key !== null) loadForm(key, docs.get(key));
  else form = null;
  renderPending = true;
  render();
}

// ---- what the client delivers ------------------------------------------------

function onLibraryEvent(event, info) {
  const data = event.data && typeof event.data === 'object' ? event.data : {};
  const key = `library:${event.path}`;
  if (event.type === 'MODIFIED') {
    upsert(
      { shelf: 'library', path: event.path, title: text(data.title), body: text(data.body), cursor: event.cursor, editor: text(data.editor) || null },
      info,
    );
  } else if (event.type === 'DELETED') {
    remove(key, text(data.editor), info);
  }
  addActivity(event, 'library', data.editor);
}

function catalogDoc(path, value, cursor) {
  const v = value && typeof value === 'object' ? value : {};
  return { shelf: 'catalog', path, title: text(v.title), body: text(v.body), cursor, editor: null };
}

// The resource's whole content: {docId: {title, body}}.
function onCatalogSnapshot(value, info) {
  let v = value;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      /* reported below */
    }
  }
  dropShelf('catalog');
  catalogNote = null;
  if (!v || typeof v !== 'object' || Array.isArray(v)) {
    catalogNote = 'The upstream resource is not an object of documents.';
    return;
  }
  for (const [id, d] of Object.entries(v)) upsert(catalogDoc(`/${id}`, d, info.cursor), { replay: true });
}

// The source's diff events: ADDED/MODIFIED carry the document in data.new.
function onCatalogEvent(event, info) {
  const data = event.data && typeof event.data === 'object' ? event.data : {};
  switch (event.type) {
    case 'ADDED':
    case 'MODIFIED':
      upsert(catalogDoc(event.path, data.new, event.cursor), info);
      break;
    case 'DELETED':
      remove(`catalog:${event.path}`, 'upstream', info);
      break;
    case 'CHANGED': // the whole value changed kind or was replaced
      onCatalogSnapshot(data.new, { cursor: event.cursor });
      break;
    case 'ERROR':
      catalogNote = `The upstream source reports an error: ${text(data.message || data.error) || 'unknown'}`;
      break;
  }
  addActivity(event, 'catalog', null);
}

// ---- user actions -----------------------------------------------------------

// A Save whose reply was lost (the node restarted, the network dropped)
// may well have been stored: clicking Save again on the same edit sends the
// same Idempotency-Key, so the node answers with the first version instead
// of storing a second. getRandomValues works on plain http, randomUUID not.
let lastAttempt = null;
function idempotencyKeyFor(key, values) {
  const same = lastAttempt && lastAttempt.key === key && lastAttempt.title === values.title && lastAttempt.body === values.body;
  if (!same) {
    const id = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
    lastAttempt = { key, title: values.title, body: values.body, id };
  }
  return lastAttempt.id;
}

async function save(e) {
  e.preventDefault();
  if (!openKey || shelfOf(openKey) !== 'library') return;
  const key = openKey;
  const values = view.formValues();
  const button = document.querySelector('[data-testid="save"]');
  pendingSave = { key, ...values };
  button.disabled = true;
  view.setSaveStatus('saving…');
  try {
    const cursor = await client.publish(
      streamName,
      { path: key.slice('library:'.length), type: 'MODIFIED', data: { title: values.title, body: values.body, editor: editorName() } },
      { idempotencyKey: idempotencyKeyFor(key, values) },
    );
    lastAttempt = null;
    if (openKey === key) {
      view.setSaveStatus(`saved at ${cursor}`);
      // Unless someone else's version already came after ours, the form now
      // holds the current version.
      if (form?.key === key && (!form.cursor || !isNewer(form.cursor, cursor))) {
        form = { key, title: values.title, body: values.body, cursor };
        view.hideConflict();
      }
    }
  } catch (err) {
    if (openKey === key) view.setSaveStatus(`not saved: ${err.message}`, true);
  } finally {
    pendingSave = null;
    button.disabled = false;
  }
}

async function create(e) {
  e.preventDefault();
  const idInput = document.querySelector('[data-testid="new-id"]');
  const titleInput = document.querySelector('[data-testid="new-title"]');
  const status = document.querySelector('[data-role="create-status"]');
  const id = idInput.value.trim();
  status.classList.add('error');
  if (!ID_RE.test(id)) {
    status.textContent = 'The id takes lowercase letters, digits and dashes.';
    return idInput.focus();
  }
  const key = `library:/${id}`;
  if (docs.has(key)) {
    status.textContent = `“${id}” already exists.`;
    return idInput.focus();
  }
  const title = titleInput.value.trim() || id;
  status.classList.remove('error');
  status.textContent = 'creating…';
  try {
    const cursor = await client.publish(streamName, { path: `/${id}`, type: 'MODIFIED', data: { title, body: '', editor: editorName() } });
    status.textContent = `created at ${cursor}`;
    idInput.value = '';
    titleInput.value = '';
    location.hash = docHash(key);
  } catch (err) {
    status.classList.add('error');
    status.textContent = `not created: ${err.message}`;
  }
}

function signIn(e) {
  e.preventDefault();
  const input = document.querySelector('[data-testid="signin-token"]');
  const token = input.value.trim();
  if (!token) return input.focus();
  store(sessionStorage, TOKEN_KEY, token);
  input.value = '';
  // The client reads the token through its function; this reopens a running
  // connection, and start() restarts a stopped one.
  client.setToken(() => stored(sessionStorage, TOKEN_KEY));
  client.start();
}

// #token=... is taken into sessionStorage and out of the address bar (and
// so out of history and bookmarks); #doc=... opens that document.
function applyHash() {
  const hash = new URLSearchParams(location.hash.slice(1));
  const token = hash.get('token');
  const doc = hash.get('doc');
  if (token) {
    store(sessionStorage, TOKEN_KEY, token);
    history.replaceState(history.state, '', location.pathname + location.search + (doc ? docHash(doc) : ''));
    if (client.state !== 'stopped') {
      client.setToken(() => stored(sessionStorage, TOKEN_KEY));
      client.start();
    }
  }
  openDoc(doc && doc.includes(':') ? doc : null);
}

// ---- wiring -------------------------------------------------------------------

setupEditorName();
document.querySelector('[data-role="edit"]').addEventListener('submit', save);
document.querySelector('[data-role="create"]').addEventListener('submit', create);
document.querySelector('[data-role="signin"]').addEventListener('submit', signIn);
window.addEventListener('hashchange', applyHash);

client.onState((state, detail) => {
  view.showConnection(state, detail);
  scheduleRender(); // the "Loading…" line and the cursor follow the state
});
client.on(streamName, '/', onLibraryEvent, {
  // The stream's history is replayed next: start from nothing, activity too.
  reset: () => {
    dropShelf('library');
    activity = activity.filter((a) => a.shelf !== 'library');
  },
});
if (catalogUri) client.onResource(catalogUri, onCatalogEvent, { snapshot: onCatalogSnapshot });

applyHash();
client.start();
