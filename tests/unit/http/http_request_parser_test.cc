// The pure request-head parser: incremental scanning, line endings, targets, framing.
#include "common/http/http_request_parser.h"

#include <gtest/gtest.h>

namespace ddp::http {
namespace {

TEST(HttpRequestParserTest, HeadArrivingByteByByteIsFoundOnce) {
  const std::string head = "GET /a?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc";
  size_t scanFrom = 0;
  for (size_t n = 1; n < head.size() - 3; ++n) {
    HeadParse p = parseRequestHead(std::string_view(head).substr(0, n), &scanFrom, 1024);
    ASSERT_EQ(p.kind, HeadParse::Kind::kNeedMore) << n;
    EXPECT_LE(scanFrom, n);
  }
  HeadParse p = parseRequestHead(head, &scanFrom, 1024);
  ASSERT_EQ(p.kind, HeadParse::Kind::kDone);
  EXPECT_EQ(p.headBytes, head.size() - 3);
  EXPECT_EQ(p.request.method, "GET");
  EXPECT_EQ(p.request.path, "/a");
  EXPECT_EQ(p.request.queryValue("x").value_or("?"), "1");
  EXPECT_EQ(p.request.header("content-length"), "3");
  EXPECT_EQ(bodyFraming(p.request).contentLength, 3u);
}

TEST(HttpRequestParserTest, BareLineFeedsAndAbsoluteTargets) {
  size_t scanFrom = 0;
  HeadParse p = parseRequestHead("POST http://example:80/x/y?q=%41 HTTP/1.0\nA: b\n\n", &scanFrom, 1024);
  ASSERT_EQ(p.kind, HeadParse::Kind::kDone) << p.reason;
  EXPECT_EQ(p.request.target, "/x/y?q=%41");
  EXPECT_EQ(p.request.queryValue("q").value_or("?"), "A");
  EXPECT_EQ(p.request.versionMinor, 0);
  EXPECT_FALSE(bodyFraming(p.request).keepAlive);  // HTTP/1.0
  scanFrom = 0;
  p = parseRequestHead("GET http://example HTTP/1.1\r\n\r\n", &scanFrom, 1024);
  ASSERT_EQ(p.kind, HeadParse::Kind::kDone);
  EXPECT_EQ(p.request.path, "/");
}

TEST(HttpRequestParserTest, FramingAndKeepAlive) {
  Request r;
  r.versionMinor = 1;
  EXPECT_TRUE(bodyFraming(r).keepAlive);
  r.headers = {{"Connection", "keep-alive, Close"}};
  EXPECT_FALSE(bodyFraming(r).keepAlive);
  r.headers = {{"content-length", "7, 7"}, {"Expect", "100-continue"}};
  BodyFraming f = bodyFraming(r);
  EXPECT_EQ(f.status, 0) << f.reason;
  EXPECT_EQ(f.contentLength, 7u);
  EXPECT_TRUE(f.expectContinue);
  r.headers = {{"Content-Length", "+7"}};
  EXPECT_EQ(bodyFraming(r).status, 400);
  r.headers = {{"Transfer-Encoding", "gzip, chunked"}, {"Content-Length", "3"}};
  EXPECT_EQ(bodyFraming(r).status, 411);
  uint64_t v = 0;
  EXPECT_TRUE(parseDecimalU64("18446744073709551615", &v));
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_FALSE(parseDecimalU64("18446744073709551616", &v));
  EXPECT_FALSE(parseDecimalU64("", &v));
  EXPECT_FALSE(parseDecimalU64(" 1", &v));
}

TEST(HttpRequestParserTest, RejectionsCarryStatusAndReason) {
  const std::pair<std::string, int> cases[] = {
      {"GET /\r\n\r\n", 400},
      {"GET  / HTTP/1.1\r\n\r\n", 400},
      {"G(T / HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/3.0\r\n\r\n", 505},
      {"GET / HTTQ/1.1\r\n\r\n", 400},
      {"GET /\x01 HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nX: a\x01b\r\n\r\n", 400},
  };
  for (const auto& [head, status] : cases) {
    size_t scanFrom = 0;
    HeadParse p = parseRequestHead(head, &scanFrom, 1024);
    EXPECT_EQ(p.kind, HeadParse::Kind::kError) << head;
    EXPECT_EQ(p.status, status) << head;
    EXPECT_FALSE(p.reason.empty());
  }
  size_t scanFrom = 0;
  HeadParse p = parseRequestHead("GET / HTTP/1.1\r\nX: " + std::string(100, 'x'), &scanFrom, 64);
  EXPECT_EQ(p.status, 431);
}

TEST(HttpTypesTest, DecodingAndJson) {
  EXPECT_EQ(percentDecode("a%2Fb%zz%4"), "a/b%zz%4");
  EXPECT_EQ(percentDecode("a+b", true), "a b");
  EXPECT_EQ(percentDecode("a+b"), "a+b");
  auto q = parseQuery("a=1&&b&a=%202&=x");
  ASSERT_EQ(q.size(), 4u);
  EXPECT_EQ(q[1], (std::pair<std::string, std::string>{"b", ""}));
  EXPECT_EQ(q[2], (std::pair<std::string, std::string>{"a", " 2"}));
  EXPECT_EQ(jsonErrorBody("say \"hi\"\n\x01"), "{\"error\":\"say \\\"hi\\\"\\n\\u0001\"}");
  EXPECT_TRUE(headerHasToken("keep-alive , Upgrade", "upgrade"));
  EXPECT_FALSE(headerHasToken("keep-alive", "close"));
}

}  // namespace
}  // namespace ddp::http
