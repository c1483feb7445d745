// UTF-8 well-formedness against the RFC 3629 table: each kind of ill-formed sequence, at its
// byte offset, and the repairs (U+FFFD) and truncations built on it.
#include "common/utf8.h"

#include <gtest/gtest.h>

namespace ddp {
namespace {

constexpr size_t npos = std::string_view::npos;

TEST(Utf8Test, WellFormedTextOfEveryLengthPasses) {
  EXPECT_EQ(invalidUtf8Offset(""), npos);
  EXPECT_EQ(invalidUtf8Offset("plain ascii"), npos);
  EXPECT_EQ(invalidUtf8Offset("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), npos);  // é € 😀
  EXPECT_EQ(invalidUtf8Offset("\xED\x9F\xBF"), npos);      // U+D7FF, just below the surrogates
  EXPECT_EQ(invalidUtf8Offset("\xF4\x8F\xBF\xBF"), npos);  // U+10FFFF, the last code point
}

TEST(Utf8Test, EachIllFormedSequenceIsFoundAtItsFirstByte) {
  EXPECT_EQ(invalidUtf8Offset("ab\xFF"), 2u);                // never a UTF-8 byte
  EXPECT_EQ(invalidUtf8Offset("a\x80"), 1u);                 // a lone continuation byte
  EXPECT_EQ(invalidUtf8Offset("\xC0\xAF"), 0u);              // overlong '/'
  EXPECT_EQ(invalidUtf8Offset("x\xE0\x80\xAF"), 1u);         // overlong, three bytes
  EXPECT_EQ(invalidUtf8Offset("\xED\xA0\x80"), 0u);          // a surrogate (U+D800)
  EXPECT_EQ(invalidUtf8Offset("\xF4\x90\x80\x80"), 0u);      // above U+10FFFF
  EXPECT_EQ(invalidUtf8Offset("ok\xE2\x82"), 2u);            // cut short at the end
  EXPECT_EQ(invalidUtf8Offset("\xC3\xA9\xC3("), 2u);         // a lead byte without its follower
}

TEST(Utf8Test, RepairsReplaceOnlyTheBadBytes) {
  EXPECT_EQ(toValidUtf8("a\xFF" "b\xC3\xA9"), "a\xEF\xBF\xBD" "b\xC3\xA9");
  EXPECT_EQ(invalidUtf8Offset(toValidUtf8("\xED\xA0\x80\xC0")), npos);
  EXPECT_EQ(toValidUtf8("fine"), "fine");
}

TEST(Utf8Test, PrefixesNeverCutACharacter) {
  const std::string s = "ab\xE2\x82\xAC";  // "ab€"
  EXPECT_EQ(utf8Prefix(s, 10), s);
  EXPECT_EQ(utf8Prefix(s, 5), s);
  EXPECT_EQ(utf8Prefix(s, 4), "ab");
  EXPECT_EQ(utf8Prefix(s, 3), "ab");
  EXPECT_EQ(utf8Prefix(s, 2), "ab");
}

TEST(Utf8Test, PositionsCountLinesAndColumnsFromOne) {
  const std::string doc = "line one\nab\xFF";
  ASSERT_EQ(invalidUtf8Offset(doc), 11u);
  const TextPosition at = textPosition(doc, 11);
  EXPECT_EQ(at.line, 2);
  EXPECT_EQ(at.column, 3);
  EXPECT_EQ(describeInvalidUtf8(doc, 11), "invalid UTF-8 at byte 11 (line 2, column 3)");
}

}  // namespace
}  // namespace ddp
