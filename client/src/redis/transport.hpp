// redis/transport.hpp -- the byte stream under a Redis connection: a TCP
// socket to one node, wrapped in TLS (OpenSSL) for rediss:// and redlocks://.
// redis/connection.cpp speaks RESP over it with hiredis's reader and
// formatter; nothing here knows the protocol (docs/design.md#wire-formats).
//
// Every call is bounded by a deadline: the socket is non-blocking, a connect
// and each read or write wait in poll(2) for what is left.  (Resolving a host
// name is getaddrinfo's, which no deadline bounds, as with hiredis before.)  A failed call
// leaves the stream unusable (the caller drops it); a read that found nothing
// by its deadline is not a failure (a subscriber's wait uses that).
//
// TLS: the server's certificate is always verified, against the CA of
// cacert= (else the system's store), and so is its name: the URL's host
// name (sent as SNI too) or IP address must be one the certificate names.
// A refused certificate, either way, is Errc::permission naming OpenSSL's
// reason; so is a server's alert refusing ours.  Under TLS 1.3 a server
// judges the client's certificate after the client's side of the handshake
// is done, so its refusal comes with the first read, or as a reset: a
// caller that sees the stream break before any reply can ask
// tls12_refusal() whether a TLS 1.2 handshake (which gets the verdict within
// the handshake) is refused, and why.
//
// SIGPIPE: plain writes use send(MSG_NOSIGNAL); OpenSSL writes with
// write(2), so every TLS call runs with SIGPIPE blocked in its thread (a
// write to a reset connection must not kill the host service).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>

#include "detail/endpoints.hpp"
#include "detail/tls.hpp"
#include "pglease/result.hpp"

struct ssl_ctx_st; // OpenSSL; only transport.cpp includes its headers
struct ssl_st;

namespace pglease::detail::redis {

using Deadline = std::chrono::steady_clock::time_point;

/// What every TLS connection to the nodes of one URL shares: an OpenSSL
/// client context holding the trusted CAs and the client certificate,
/// loaded once.
class TlsContext {
public:
	/// Errc::invalid_argument when a file is not what it should be (no PEM
	/// certificate in it, a key that does not match the certificate); no
	/// I/O but reading the files (detail/tls.hpp checked they are readable).
	[[nodiscard]] static Result<std::shared_ptr<const TlsContext>> create(const TlsFiles &files) noexcept;
	~TlsContext();
	TlsContext(const TlsContext &) = delete;
	TlsContext &operator=(const TlsContext &) = delete;
	[[nodiscard]] ssl_ctx_st *get() const noexcept { return ctx_; }

private:
	explicit TlsContext(ssl_ctx_st *ctx) noexcept : ctx_(ctx) {}
	ssl_ctx_st *ctx_;
};

/// The TLS of a node's connections; null: plain TCP.
using Tls = std::shared_ptr<const TlsContext>;

/// One connected stream.  Errors carry the reason only; the caller names the
/// node and what it was doing.
class Transport {
public:
	/// Connect to endpoint (each of its addresses in turn) and, with tls,
	/// complete the handshake, all by deadline.  Errc::unavailable when the
	/// node cannot be reached in time or the handshake breaks off,
	/// Errc::permission when a certificate is refused (see the banner).
	[[nodiscard]] static Result<Transport> open(const HostPort &endpoint, const Tls &tls,
	                                            Deadline deadline) noexcept;

	/// Only the TCP connection by deadline; with tls, the session is set up
	/// and its handshake left to continue_handshake(), so that a caller can
	/// shake hands with several nodes at once in one poll(2) (redlock/link.cpp).
	[[nodiscard]] static Result<Transport> connect_only(const HostPort &endpoint, const Tls &tls,
	                                                    Deadline deadline) noexcept;

	/// One more step of the TLS handshake connect_only() began, never
	/// waiting: true when it is done (at once without TLS), false when it
	/// waits for the socket (POLLOUT when handshake_wants_write(), else
	/// POLLIN).  Its errors are open()'s.
	[[nodiscard]] Result<bool> continue_handshake(const HostPort &endpoint) noexcept;
	[[nodiscard]] bool handshaking() const noexcept { return handshaking_; }
	[[nodiscard]] bool handshake_wants_write() const noexcept { return handshake_wants_write_; }

	/// Why a TLS 1.2 handshake with endpoint is refused (Errc::permission),
	/// if it is; nothing when it succeeds or fails otherwise.
	[[nodiscard]] static std::optional<Error> tls12_refusal(const HostPort &endpoint, const Tls &tls,
	                                                        Deadline deadline) noexcept;

	Transport(Transport &&other) noexcept;
	Transport &operator=(Transport &&other) noexcept;
	Transport(const Transport &) = delete;
	Transport &operator=(const Transport &) = delete;
	~Transport();

	/// All of bytes sent by deadline, else Errc::unavailable.
	[[nodiscard]] Result<void> write_all(std::string_view bytes, Deadline deadline) noexcept;

	/// Up to size bytes into buf, once some came; 0 when none came by
	/// deadline (the stream stays usable).  The end of the stream, an I/O
	/// error or a broken TLS record is Errc::unavailable; a server's TLS
	/// alert refusing our certificate Errc::permission.
	[[nodiscard]] Result<std::size_t> read_some(char *buf, std::size_t size, Deadline deadline) noexcept;

	[[nodiscard]] bool tls() const noexcept { return ssl_ != nullptr; }

	/// The socket, for a caller that waits on several streams in one poll(2)
	/// (redlock/round.cpp) and then reads each with read_some and a deadline
	/// already passed: it takes what came without waiting.  Read until it
	/// returns 0 before polling again: TLS may hold bytes the socket no
	/// longer shows.
	[[nodiscard]] int fd() const noexcept { return fd_; }

private:
	Transport(int fd, Tls tls) noexcept;
	static Result<Transport> open_as(const HostPort &endpoint, const Tls &tls, Deadline deadline,
	                                 bool tls12_only) noexcept;
	// these may throw std::bad_alloc (their callers catch it)
	Result<void> handshake(const HostPort &endpoint, Deadline deadline, bool tls12_only);
	Result<void> tls_setup(const HostPort &endpoint, bool tls12_only);
	Result<bool> handshake_step(const HostPort &endpoint);
	Result<std::size_t> plain_read(char *buf, std::size_t size, Deadline deadline);
	Result<std::size_t> tls_read(char *buf, std::size_t size, Deadline deadline);
	Result<void> plain_write(std::string_view bytes, Deadline deadline);
	Result<void> tls_write(std::string_view bytes, Deadline deadline);
	void close() noexcept;

	int fd_ = -1;
	ssl_st *ssl_ = nullptr;
	Tls tls_;                            // the context outlives every session made from it
	bool handshaking_ = false;           // connect_only() left the TLS handshake to finish
	bool handshake_wants_write_ = false; // ... and it waits to write
};

} // namespace pglease::detail::redis
