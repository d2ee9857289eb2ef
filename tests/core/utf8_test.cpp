#include <catch2/catch.hpp>

#include "core/utf8.hpp"

using tidings::core::cut_utf8;

TEST_CASE("cut_utf8 keeps short text and never splits a sequence", "[utf8]") {
  CHECK(cut_utf8("short", 10) == "short");
  CHECK(cut_utf8("exactly10!", 10) == "exactly10!");
  CHECK(cut_utf8("0123456789ab", 10) == "0123456789\xe2\x80\xa6");
  // "→" is three bytes; a cut through it backs off to before it.
  CHECK(cut_utf8("ab\xe2\x86\x92"
                 "cd",
                 3) == "ab\xe2\x80\xa6");
  CHECK(cut_utf8("ab\xe2\x86\x92"
                 "cd",
                 5) == "ab\xe2\x86\x92\xe2\x80\xa6");
}
