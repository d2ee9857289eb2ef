// JSON over HTTP to the node under test, with a bearer token.

export async function call(base, method, path, { token, body, headers = {} } = {}) {
  const res = await fetch(base + path, {
    method,
    headers: {
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

export async function publish(base, token, stream, events) {
  const r = await call(base, 'POST', `/v1/streams/${stream}/events`, { token, body: events });
  if (r.status !== 201) throw new Error(`publish to ${stream}: ${r.status} ${r.text}`);
  return r.json;
}

// Polls `probe` (async, returns a value or undefined) until it gives
// something, at most `timeoutMs`; for conditions with no event to await.
export async function eventually(probe, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await probe();
    if (last !== undefined && last !== false) return last;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
