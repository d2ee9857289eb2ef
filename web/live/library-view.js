// DOM rendering for the library live view. Every piece of document data goes
// in through textContent or attributes, never as HTML: a title such as
// "<img onerror=...>" must show as those characters.

const FLASH_MS = 1600;
const SHELF_LABELS = { library: 'Library', catalog: 'Catalog' };

const $ = (selector) => document.querySelector(selector);
const byTestId = (id) => $(`[data-testid="${id}"]`);
const byRole = (role) => $(`[data-role="${role}"]`);

/** A small element builder: attributes as strings, children as nodes or text. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'className') node.className = value;
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

/** "library:/moby-dick" in a hash, readable: ':' and '/' are fine in a fragment. */
export function docHash(key) {
  return '#doc=' + encodeURIComponent(key).replace(/%3A/gi, ':').replace(/%2F/gi, '/');
}

function formatTime(ms) {
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return { text: '', iso: '' };
  const sameDay = d.toDateString() === new Date().toDateString();
  const text = sameDay
    ? d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' })
    : d.toLocaleString([], { dateStyle: 'short', timeStyle: 'short' });
  return { text, iso: d.toISOString() };
}

function byTitle(a, b) {
  return a.title.localeCompare(b.title, undefined, { sensitivity: 'base' }) || a.path.localeCompare(b.path);
}

export class LibraryView {
  constructor() {
    this.state = byTestId('connection-state');
    this.detail = byTestId('connection-detail');
    this.cursor = byTestId('cursor');
    this.signin = byRole('signin');
    this.list = byTestId('doc-list');
    this.placeholder = byRole('placeholder');
    this.docView = byRole('doc-view');
    this.docKey = byRole('doc-key');
    this.title = byTestId('doc-title');
    this.body = byTestId('doc-body');
    this.docCursor = byTestId('doc-cursor');
    this.docEditor = byTestId('doc-editor');
    this.meta = byRole('doc-meta');
    this.editorLine = byRole('editor-line');
    this.missing = byRole('doc-missing');
    this.editForm = byRole('edit');
    this.editFields = byRole('edit-fields');
    this.readonly = byRole('readonly');
    this.conflict = byTestId('conflict');
    this.editTitle = byTestId('edit-title');
    this.editBody = byTestId('edit-body');
    this.saveStatus = byTestId('save-status');
    this.activity = byTestId('activity');
    this.activityEmpty = byRole('activity-empty');
    this.listItems = new Map(); // doc key -> <a>, reused so focus survives updates
    this.flashTimers = new Map();
  }

  showConnection(state, detail) {
    this.state.textContent = state;
    this.state.dataset.state = state;
    // The reason alone, so it reads (and tests) as the broker's word; the
    // rest goes in the tooltip.
    this.detail.textContent = detail.reason ?? '';
    const extra = [];
    if (detail.stream) extra.push(`stream ${detail.stream}`);
    if (detail.status) extra.push(`HTTP ${detail.status}`);
    if (detail.retryInMs !== undefined) extra.push(`retrying in ${(detail.retryInMs / 1000).toFixed(1)} s`);
    this.detail.title = [detail.reason, ...extra].filter(Boolean).join(' · ');
    this.signin.hidden = state !== 'unauthorized';
  }

  showCursor(text) {
    this.cursor.textContent = text;
  }

  /** shelves: [{shelf, docs: [...], note?}] in display order. */
  renderList(shelves, openKey) {
    const seen = new Set();
    const sections = shelves.map(({ shelf, docs, note }) => {
      const items = [...docs].sort(byTitle).map((doc) => {
        seen.add(doc.key);
        return el('li', {}, this.#listItem(doc, doc.key === openKey));
      });
      const ul = el('ul', { className: 'shelf-docs' });
      ul.replaceChildren(...items);
      return el(
        'section',
        { className: 'shelf', 'data-shelf': shelf },
        el('h2', {}, SHELF_LABELS[shelf] ?? shelf, el('span', { className: 'count' }, String(docs.length))),
        note ? el('p', { className: 'notice small' }, note) : null,
        items.length ? ul : el('p', { className: 'placeholder small' }, 'No documents yet.'),
      );
    });
    for (const key of this.listItems.keys()) if (!seen.has(key)) this.listItems.delete(key);
    // Keep the focused link where it is: rebuilding would drop keyboard focus.
    const focused = document.activeElement;
    this.list.replaceChildren(...sections);
    if (focused && focused !== document.activeElement && this.list.contains(focused)) focused.focus();
  }

  #listItem(doc, open) {
    let a = this.listItems.get(doc.key);
    if (!a) {
      a = el('a', { className: 'doc-link', 'data-doc': doc.key, href: docHash(doc.key) },
        el('span', { className: 'doc-link-title' }), el('span', { className: 'doc-link-path' }));
      this.listItems.set(doc.key, a);
    }
    a.firstChild.textContent = doc.title || doc.path;
    a.lastChild.textContent = doc.path;
    if (open) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
    return a;
  }

  /** doc: the version to show, or null when the key has no document (yet, or any more). */
  renderDoc(key, doc, { missingText, readOnlyText } = {}) {
    this.placeholder.hidden = key !== null;
    this.docView.hidden = key === null;
    this.editForm.hidden = key === null;
    if (key === null) return;
    this.docKey.textContent = key;
    this.title.textContent = doc ? doc.title : '';
    // Text with its line breaks kept by CSS (white-space: pre-wrap).
    this.body.textContent = doc ? doc.body : '';
    this.docCursor.textContent = doc ? doc.cursor : '';
    this.docEditor.textContent = doc?.editor ?? '';
    this.meta.hidden = !doc;
    this.editorLine.hidden = !doc?.editor;
    this.missing.hidden = !!doc;
    this.missing.textContent = doc ? '' : missingText ?? '';
    this.readonly.hidden = !readOnlyText;
    this.readonly.textContent = readOnlyText ?? '';
    this.editFields.disabled = !!readOnlyText;
  }

  fillForm(title, body) {
    this.editTitle.value = title;
    this.editBody.value = body;
  }

  formValues() {
    return { title: this.editTitle.value, body: this.editBody.value };
  }

  /** who: the editor of the version that arrived; deleted: it was a deletion. */
  showConflict(who, deleted, onReload) {
    const name = el('strong', {}, who || 'someone');
    if (deleted) {
      this.conflict.replaceChildren('deleted by ', name, ' — saving will create it again');
    } else {
      const reload = el('button', { type: 'button', className: 'link-button', 'data-role': 'reload' }, 'reload into form');
      reload.addEventListener('click', onReload);
      this.conflict.replaceChildren('changed by ', name, ' — ', reload);
    }
    this.conflict.hidden = false;
  }

  hideConflict() {
    this.conflict.hidden = true;
    this.conflict.replaceChildren();
  }

  setSaveStatus(text, isError = false) {
    this.saveStatus.textContent = text;
    this.saveStatus.classList.toggle('error', isError);
  }

  /** items: newest first, at most 50: {cursor, stream, type, path, editor, time, key, shelf}. */
  renderActivity(items) {
    this.activityEmpty.hidden = items.length > 0;
    this.activity.replaceChildren(
      ...items.map((item) => {
        const when = formatTime(item.time);
        return el(
          'li',
          { 'data-cursor': item.cursor, 'data-stream': item.stream, className: 'activity-item' },
          el('span', { className: `type type-${item.type.toLowerCase()}` }, item.type),
          el('a', { className: 'activity-path', href: docHash(item.key), title: item.key }, item.path),
          el('span', { className: 'activity-editor' }, item.editor || (item.shelf === 'catalog' ? 'upstream' : '')),
          el('time', { datetime: when.iso }, when.text),
        );
      }),
    );
  }

  /** Briefly mark a document that just changed, in the list and, if open, its view. */
  flash(key, isOpen) {
    const targets = [this.listItems.get(key), isOpen ? this.docView : null].filter(Boolean);
    for (const t of targets) {
      // Restart the animation if it is already running.
      t.classList.remove('flash');
      void t.offsetWidth;
      t.classList.add('flash');
    }
    clearTimeout(this.flashTimers.get(key));
    this.flashTimers.set(
      key,
      setTimeout(() => {
        this.flashTimers.delete(key);
        for (const t of targets) t.classList.remove('flash');
      }, FLASH_MS),
    );
  }
}
