#pragma once

// GET /live/...: the live view page and its client module (web/live/), from
// the copy embedded in the binary. Open to anyone like any static page: the
// page holds no data, every data request it makes carries its own token.

#include "broker/http_types.hpp"

namespace tidings::broker {

// Null when `req.path` is not under /live. Otherwise the answer: the file
// (200, or 304 when If-None-Match names its ETag), a redirect from /live to
// /live/, 404 for a file that does not exist, 405 for a method but GET/HEAD.
std::optional<http_response> serve_live_file(const http_request& req);

}  // namespace tidings::broker
