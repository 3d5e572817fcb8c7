#include "suites/harness/protocol.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "suites/harness/dtype.h"

namespace samplecheck::protocol {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {

bool write_all(int fd, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    // send(): a subject that has gone must not kill samplecheck with SIGPIPE.
    const ssize_t w = ::send(fd, p, size, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    size -= static_cast<size_t>(w);
  }
  return true;
}

// Reads exactly `size` bytes by `deadline`.
frame_status read_exact(int fd, double deadline, void* data, size_t size, size_t& got) {
  auto* p = static_cast<uint8_t*>(data);
  got = 0;
  while (got < size) {
    int wait_ms = -1;
    if (deadline != kNoDeadline) {
      const double left = deadline - now_seconds();
      if (left <= 0) return frame_status::timeout;
      wait_ms = static_cast<int>(left * 1000) + 1;
    }
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return frame_status::io_error;
    if (ready == 0) continue;  // the deadline check above ends the wait
    const ssize_t n = ::read(fd, p + got, size - got);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return frame_status::io_error;
    if (n == 0) return frame_status::eof;
    got += static_cast<size_t>(n);
  }
  return frame_status::ok;
}

}  // namespace

bool send_frame(int fd, const nlohmann::json& message) {
  const std::string text = message.dump();
  const auto n = static_cast<uint32_t>(text.size());
  const uint8_t header[4] = {static_cast<uint8_t>(n), static_cast<uint8_t>(n >> 8),
                             static_cast<uint8_t>(n >> 16), static_cast<uint8_t>(n >> 24)};
  return write_all(fd, header, sizeof header) && write_all(fd, text.data(), text.size());
}

frame_status recv_frame(int fd, double deadline, nlohmann::json& message, std::string& why) {
  uint8_t header[4];
  size_t got = 0;
  frame_status st = read_exact(fd, deadline, header, sizeof header, got);
  if (st == frame_status::eof && got > 0) {
    why = fmt::format("the control socket closed after {} of a frame's 4 length bytes", got);
    return frame_status::malformed;
  }
  if (st != frame_status::ok) return st;
  const uint32_t n = header[0] | header[1] << 8 | header[2] << 16 | uint32_t{header[3]} << 24;
  if (n == 0 || n > kMaxFrame) {
    why = fmt::format("a frame of length {} (bytes {:02x} {:02x} {:02x} {:02x}), outside [1, {}]",
                      n, header[0], header[1], header[2], header[3], kMaxFrame);
    return frame_status::malformed;
  }
  std::string text(n, '\0');
  st = read_exact(fd, deadline, text.data(), n, got);
  if (st == frame_status::eof) {
    why = fmt::format("the control socket closed after {} of a frame's {} bytes", got, n);
    return frame_status::malformed;
  }
  if (st != frame_status::ok) return st;
  try {
    message = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    why = fmt::format("a frame that is not JSON ({}): {:.80}", e.what(), text);
    return frame_status::malformed;
  }
  if (!message.is_object() || !message.contains("type") || !message["type"].is_string()) {
    why = fmt::format("a frame that is not a JSON object with a string \"type\": {:.80}", text);
    return frame_status::malformed;
  }
  return frame_status::ok;
}

shared_region::~shared_region() {
  if (base_ != nullptr) ::munmap(base_, size_);
  if (fd_ >= 0) ::close(fd_);
}

bool shared_region::remap(size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) return false;
  if (base_ != nullptr) ::munmap(base_, size_);
  base_ = static_cast<uint8_t*>(p);
  size_ = bytes;
  return true;
}

bool shared_region::reserve(size_t bytes) {
  if (bytes <= size_) return true;
  const size_t grown = std::max(bytes, 2 * size_);
  if (::ftruncate(fd_, static_cast<off_t>(grown)) != 0) return false;
  return remap(grown);
}

bool shared_region::map(size_t bytes) {
  if (bytes <= size_) return true;
  return remap(bytes);
}

nlohmann::json region_layout::place(size_t count, size_t element_size) {
  const size_t at = (used + kAlignment - 1) / kAlignment * kAlignment;
  used = at + count * element_size;
  return {{"at", at}, {"count", count}};
}

namespace {

// The length of the UTF-8 sequence at text[i] that encodes a character other than a C1
// control (U+0080..U+009F), or 0.
size_t printable_utf8(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  const size_t n = b >= 0xF5 ? 0 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 ? 2 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  const uint32_t lead = b & (0xFF >> (n + 1));
  uint32_t cp = lead;
  for (size_t k = 1; k < n; ++k) cp = cp << 6 | (byte(i + k) & 0x3F);
  const uint32_t least[] = {0, 0, 0xA0, 0x800, 0x10000};  // overlong forms, C1 controls below
  if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b >= 0x20 && b < 0x7F) {
      out += text[i++];
    } else if (const size_t n = b >= 0x80 ? printable_utf8(text, i) : 0; n > 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out += fmt::format("\\x{:02x}", b);
      ++i;
    }
  }
  return out;
}

int32_t dtype_from_word(const std::string& word) {
  for (const int32_t d : {SC_DTYPE_F32, SC_DTYPE_BF16, SC_DTYPE_F16})
    if (word == harness::dtype_name(d)) return d;
  return 0;
}

}  // namespace samplecheck::protocol
