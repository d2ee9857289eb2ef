// HS256 tokens for the test tenants, signed with node's own HMAC.

import { createHmac, randomUUID } from 'node:crypto';

const b64url = (value) => Buffer.from(value).toString('base64url');

export function mintHs256(secret, claims, kid) {
  const header = { alg: 'HS256', typ: 'JWT', ...(kid ? { kid } : {}) };
  const body = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
  return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}`;
}

// Claims for `sub` in `tenant`, valid for `seconds`, with a fresh jti.
export function claims(tenant, sub, tidings, seconds = 3600) {
  const now = Math.floor(Date.now() / 1000);
  return { tenant, sub, iat: now, exp: now + seconds, jti: randomUUID(), tidings };
}
