// redis/transport.cpp -- every socket and OpenSSL call of the Redis providers
// (what the stream promises: transport.hpp).
//
// Only documented calls: getaddrinfo and a non-blocking connect(2) finished
// by poll(2) and SO_ERROR; OpenSSL's SSL_connect / SSL_read / SSL_write on a
// non-blocking socket, each retried after poll(2) on SSL_ERROR_WANT_READ or
// SSL_ERROR_WANT_WRITE (the OpenSSL manual pages of SSL_get_error and
// SSL_connect), the peer checked with SSL_VERIFY_PEER and
// X509_VERIFY_PARAM_set1_host / set1_ip_asc.
#include "redis/transport.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

namespace pglease::detail::redis {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

Error
unavailable(std::string why)
{
	return Error{Errc::unavailable, "", std::move(why)};
}

// wait_for -- poll fd for events until deadline: 1 ready (or hung up / in
// error: the next call says which), 0 deadline passed, -1 poll failed
int
wait_for(int fd, short events, Deadline deadline) noexcept
{
	for (;;) {
		int timeout = -1;
		if (deadline != Deadline::max()) {
			auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now()).count();
			timeout = left > 0 ? static_cast<int>(std::min<long long>(left, 1 << 30)) : 0;
		}
		pollfd pfd{fd, events, 0};
		int ready = ::poll(&pfd, 1, timeout);
		if (ready >= 0)
			return ready;
		if (errno != EINTR)
			return -1;
	}
}

// SigpipeGuard -- SIGPIPE blocked in this thread for the guard's life; one
// raised meanwhile is consumed (unless one was already pending), so it is
// never delivered to the process (libpq's approach)
class SigpipeGuard {
public:
	SigpipeGuard() noexcept
	{
		sigset_t pipe;
		sigemptyset(&pipe);
		sigaddset(&pipe, SIGPIPE);
		sigset_t pending;
		sigemptyset(&pending);
		sigpending(&pending);
		was_pending_ = sigismember(&pending, SIGPIPE) == 1;
		blocked_ = pthread_sigmask(SIG_BLOCK, &pipe, &old_) == 0;
	}
	~SigpipeGuard()
	{
		if (!blocked_)
			return;
		sigset_t pending;
		sigemptyset(&pending);
		sigpending(&pending);
		if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
			sigset_t pipe;
			sigemptyset(&pipe);
			sigaddset(&pipe, SIGPIPE);
			timespec zero{};
			int saved_errno = errno;
			while (sigtimedwait(&pipe, nullptr, &zero) < 0 && errno == EINTR) {
			}
			errno = saved_errno;
		}
		pthread_sigmask(SIG_SETMASK, &old_, nullptr);
	}
	SigpipeGuard(const SigpipeGuard &) = delete;
	SigpipeGuard &operator=(const SigpipeGuard &) = delete;

private:
	sigset_t old_{};
	bool was_pending_ = false;
	bool blocked_ = false;
};

// connect_one -- a non-blocking socket connected to address by deadline, or
// -1 with why set
int
connect_one(const addrinfo &address, Deadline deadline, std::string &why)
{
	int fd =
	    ::socket(address.ai_family, address.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, address.ai_protocol);
	if (fd < 0) {
		why = std::strerror(errno);
		return -1;
	}
	int error = 0;
	if (::connect(fd, address.ai_addr, address.ai_addrlen) != 0) {
		error = errno;
		if (error == EINPROGRESS) {
			int ready = wait_for(fd, POLLOUT, deadline);
			socklen_t len = sizeof error;
			if (ready == 0)
				error = ETIMEDOUT;
			else if (ready < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0)
				error = errno;
		}
	}
	if (error != 0) {
		why = error == ETIMEDOUT ? "no connection within the connect timeout" : std::strerror(error);
		::close(fd);
		return -1;
	}
	int on = 1; // one small command, one reply: no Nagle delay
	(void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
	return fd;
}

// tcp_connect -- a connected socket to endpoint: its addresses tried in
// turn, all by deadline
Result<int>
tcp_connect(const HostPort &endpoint, Deadline deadline)
{
	addrinfo hints{};
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	addrinfo *found = nullptr;
	const std::string port = std::to_string(endpoint.port);
	if (int rc = ::getaddrinfo(endpoint.host.c_str(), port.c_str(), &hints, &found); rc != 0)
		return unavailable(std::string("cannot resolve \"") + endpoint.host +
		                   "\": " + (rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc)));
	std::unique_ptr<addrinfo, void (*)(addrinfo *)> addresses(found, ::freeaddrinfo);
	std::string why = "no address";
	for (const addrinfo *a = found; a != nullptr; a = a->ai_next)
		if (int fd = connect_one(*a, deadline, why); fd >= 0)
			return fd;
	return unavailable(why);
}

// ssl_reason -- OpenSSL's reason for the last failure of this thread, ""
// when it recorded none
std::string
ssl_reason()
{
	unsigned long last = 0;
	while (unsigned long e = ERR_get_error())
		last = e;
	if (last == 0)
		return "";
	const char *reason = ERR_reason_error_string(last);
	return reason != nullptr ? reason : "error " + std::to_string(ERR_GET_REASON(last));
}

// refused_by_server -- OpenSSL's reason names an alert by which the server
// refused our certificate (or the lack of one)
bool
refused_by_server(unsigned long e) noexcept
{
	if (ERR_GET_LIB(e) != ERR_LIB_SSL)
		return false;
	switch (ERR_GET_REASON(e)) {
	case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
	case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE:
	case SSL_R_SSLV3_ALERT_NO_CERTIFICATE:
	case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
	case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
	case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
	case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
		return true;
	default:
		return false;
	}
}

// tls_failure -- the Error for a failed TLS call (SSL_get_error said
// ssl_error): a server's alert refusing our certificate is permission, a
// record that is no TLS (a plain port?) or a broken stream unavailable
Error
tls_failure(int ssl_error, int saved_errno)
{
	if (ssl_error == SSL_ERROR_ZERO_RETURN)
		return unavailable("the server closed the TLS connection");
	const unsigned long first = ERR_peek_error();
	if (first != 0 && refused_by_server(first))
		return Error{Errc::permission, "",
		             "the server refused our TLS connection: " + ssl_reason() +
		                 " (does it require a client certificate, cert= and key=, signed by a CA it "
		                 "trusts?)"};
	std::string reason = ssl_reason();
	if (!reason.empty())
		return unavailable("TLS: " + reason +
		                   (reason.find("wrong version") != std::string::npos
		                        ? " (is this port a TLS port of Redis?)"
		                        : ""));
	if (ssl_error == SSL_ERROR_SYSCALL && saved_errno != 0)
		return unavailable(std::strerror(saved_errno));
	return unavailable("the server closed the connection");
}

// verify_host -- the name or address the server's certificate must name;
// a name is also sent as SNI
bool
verify_host(SSL *ssl, const std::string &host) noexcept
{
	in6_addr ip{};
	const bool literal =
	    ::inet_pton(AF_INET, host.c_str(), &ip) == 1 || ::inet_pton(AF_INET6, host.c_str(), &ip) == 1;
	X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
	if (literal)
		return X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1;
	X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	return X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size()) == 1 &&
	       SSL_set_tlsext_host_name(ssl, host.c_str()) == 1;
}

} // namespace

// ---- TlsContext -------------------------------------------------------------------

Result<std::shared_ptr<const TlsContext>>
TlsContext::create(const TlsFiles &files) noexcept
{
	try {
		ERR_clear_error();
		SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
		if (ctx == nullptr)
			return Error{Errc::internal, "", "TLS: cannot make a context: " + ssl_reason()};
		std::shared_ptr<const TlsContext> made(new TlsContext(ctx));
		SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
		SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
		auto bad = [](const std::string &what, const std::string &path) {
			return Error{Errc::invalid_argument, "",
			             "TLS: the " + what + " file \"" + path + "\" is not usable: " + ssl_reason()};
		};
		if (files.ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx) != 1
		                          : SSL_CTX_load_verify_locations(ctx, files.ca_file.c_str(), nullptr) != 1)
			return files.ca_file.empty()
			           ? Error{Errc::internal, "", "TLS: no system CA store: " + ssl_reason()}
			           : bad("CA (cacert)", files.ca_file);
		if (!files.cert_file.empty()) {
			if (SSL_CTX_use_certificate_chain_file(ctx, files.cert_file.c_str()) != 1)
				return bad("client certificate (cert)", files.cert_file);
			// the reason names no key material, only what is wrong with it
			if (SSL_CTX_use_PrivateKey_file(ctx, files.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
				return bad("client key (key)", files.key_file);
			if (SSL_CTX_check_private_key(ctx) != 1)
				return Error{Errc::invalid_argument, "",
				             "TLS: the client key (key) file \"" + files.key_file +
				                 "\" is not the key of the certificate \"" + files.cert_file + "\""};
		}
		return made;
	} catch (const std::bad_alloc &) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

TlsContext::~TlsContext()
{
	SSL_CTX_free(ctx_);
}

// ---- Transport --------------------------------------------------------------------

Transport::Transport(int fd, Tls tls) noexcept : fd_(fd), tls_(std::move(tls)) {}

Transport::Transport(Transport &&other) noexcept
    : fd_(other.fd_), ssl_(other.ssl_), tls_(std::move(other.tls_)), handshaking_(other.handshaking_),
      handshake_wants_write_(other.handshake_wants_write_)
{
	other.fd_ = -1;
	other.ssl_ = nullptr;
}

Transport &
Transport::operator=(Transport &&other) noexcept
{
	if (this != &other) {
		close();
		fd_ = other.fd_;
		ssl_ = other.ssl_;
		tls_ = std::move(other.tls_);
		handshaking_ = other.handshaking_;
		handshake_wants_write_ = other.handshake_wants_write_;
		other.fd_ = -1;
		other.ssl_ = nullptr;
	}
	return *this;
}

Transport::~Transport()
{
	close();
}

// close -- no close_notify is sent: it would be a write that can block or
// raise SIGPIPE, and a Redis server needs none
void
Transport::close() noexcept
{
	if (ssl_ != nullptr)
		SSL_free(ssl_);
	ssl_ = nullptr;
	if (fd_ >= 0)
		::close(fd_);
	fd_ = -1;
}

Result<Transport>
Transport::open(const HostPort &endpoint, const Tls &tls, Deadline deadline) noexcept
{
	return open_as(endpoint, tls, deadline, false);
}

std::optional<Error>
Transport::tls12_refusal(const HostPort &endpoint, const Tls &tls, Deadline deadline) noexcept
{
	if (!tls)
		return std::nullopt;
	auto probe = open_as(endpoint, tls, deadline, true);
	if (probe || probe.error().code != Errc::permission)
		return std::nullopt;
	try {
		return probe.error();
	} catch (const std::bad_alloc &) {
		return std::nullopt;
	}
}

Result<Transport>
Transport::open_as(const HostPort &endpoint, const Tls &tls, Deadline deadline, bool tls12_only) noexcept
{
	try {
		auto fd = tcp_connect(endpoint, deadline);
		if (!fd)
			return fd.error();
		Transport stream(*fd, tls);
		if (tls) {
			if (auto ok = stream.handshake(endpoint, deadline, tls12_only); !ok)
				return ok.error();
		}
		return stream;
	} catch (const std::bad_alloc &) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

// handshake -- TLS over the connected socket, the server's certificate and
// name verified
Result<void>
Transport::handshake(const HostPort &endpoint, Deadline deadline, bool tls12_only)
{
	if (auto ok = tls_setup(endpoint, tls12_only); !ok)
		return ok;
	for (;;) {
		auto done = handshake_step(endpoint);
		if (!done)
			return done.error();
		if (*done)
			return {};
		int ready = wait_for(fd_, handshake_wants_write_ ? POLLOUT : POLLIN, deadline);
		if (ready == 0)
			return unavailable("no TLS handshake within the connect timeout (is this port a TLS port "
			                   "of Redis?)");
		if (ready < 0)
			return unavailable(std::string("poll: ") + std::strerror(errno));
	}
}

// tls_setup -- the session over the connected socket, checking the
// server's certificate and name
Result<void>
Transport::tls_setup(const HostPort &endpoint, bool tls12_only)
{
	ERR_clear_error();
	ssl_ = SSL_new(tls_->get());
	if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1 || !verify_host(ssl_, endpoint.host) ||
	    (tls12_only && SSL_set_max_proto_version(ssl_, TLS1_2_VERSION) != 1))
		return Error{Errc::internal, "", "TLS: cannot set up the session: " + ssl_reason()};
	handshaking_ = true;
	return {};
}

// handshake_step -- one SSL_connect: true when the handshake is done, false
// when it waits for the socket (handshake_wants_write_ says which way)
Result<bool>
Transport::handshake_step(const HostPort &endpoint)
{
	SigpipeGuard no_sigpipe;
	ERR_clear_error();
	errno = 0;
	int rc = SSL_connect(ssl_);
	if (rc == 1) {
		handshaking_ = false;
		return true;
	}
	int saved_errno = errno;
	int error = SSL_get_error(ssl_, rc);
	if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
		handshake_wants_write_ = error == SSL_ERROR_WANT_WRITE;
		return false;
	}
	if (long verdict = SSL_get_verify_result(ssl_); verdict != X509_V_OK) {
		ERR_clear_error();
		std::string hint =
		    verdict == X509_V_ERR_HOSTNAME_MISMATCH || verdict == X509_V_ERR_IP_ADDRESS_MISMATCH
		        ? " (the certificate is not for \"" + endpoint.host + "\")"
		    : verdict == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY ||
		            verdict == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN ||
		            verdict == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT
		        ? " (not signed by a CA of cacert=, or of the system's store)"
		        : "";
		return Error{Errc::permission, "",
		             std::string("the server's TLS certificate is refused: ") +
		                 X509_verify_cert_error_string(verdict) + hint};
	}
	return tls_failure(error, saved_errno);
}

Result<Transport>
Transport::connect_only(const HostPort &endpoint, const Tls &tls, Deadline deadline) noexcept
{
	try {
		auto fd = tcp_connect(endpoint, deadline);
		if (!fd)
			return fd.error();
		Transport stream(*fd, tls);
		if (tls) {
			if (auto ok = stream.tls_setup(endpoint, false); !ok)
				return ok.error();
		}
		return stream;
	} catch (const std::bad_alloc &) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<bool>
Transport::continue_handshake(const HostPort &endpoint) noexcept
{
	if (!handshaking_)
		return true;
	try {
		return handshake_step(endpoint);
	} catch (const std::bad_alloc &) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<void>
Transport::write_all(std::string_view bytes, Deadline deadline) noexcept
{
	try {
		return ssl_ != nullptr ? tls_write(bytes, deadline) : plain_write(bytes, deadline);
	} catch (const std::bad_alloc &) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<void>
Transport::plain_write(std::string_view bytes, Deadline deadline)
{
	while (!bytes.empty()) {
		ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
		if (n > 0) {
			bytes.remove_prefix(static_cast<std::size_t>(n));
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return unavailable(std::strerror(errno));
		int ready = wait_for(fd_, POLLOUT, deadline);
		if (ready == 0)
			return unavailable("cannot send within the timeout");
		if (ready < 0)
			return unavailable(std::string("poll: ") + std::strerror(errno));
	}
	return {};
}

Result<void>
Transport::tls_write(std::string_view bytes, Deadline deadline)
{
	SigpipeGuard no_sigpipe;
	while (!bytes.empty()) {
		ERR_clear_error();
		errno = 0;
		int n = SSL_write(ssl_, bytes.data(), static_cast<int>(std::min<std::size_t>(bytes.size(), 1 << 30)));
		if (n > 0) {
			bytes.remove_prefix(static_cast<std::size_t>(n));
			continue;
		}
		int saved_errno = errno;
		int error = SSL_get_error(ssl_, n);
		if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE)
			return tls_failure(error, saved_errno);
		int ready = wait_for(fd_, error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
		if (ready == 0)
			return unavailable("cannot send within the timeout");
		if (ready < 0)
			return unavailable(std::string("poll: ") + std::strerror(errno));
	}
	return {};
}

Result<std::size_t>
Transport::read_some(char *buf, std::size_t size, Deadline deadline) noexcept
{
	try {
		return ssl_ != nullptr ? tls_read(buf, size, deadline) : plain_read(buf, size, deadline);
	} catch (const std::bad_alloc &) {
		return Error{Errc::internal, "", "out of memory"};
	}
}

Result<std::size_t>
Transport::plain_read(char *buf, std::size_t size, Deadline deadline)
{
	// hiredis's reader keeps what came before: nothing is buffered here, so
	// poll first (one recv per reply instead of a recv that finds nothing)
	for (;;) {
		int ready = wait_for(fd_, POLLIN, deadline);
		if (ready == 0)
			return std::size_t{0};
		if (ready < 0)
			return unavailable(std::string("poll: ") + std::strerror(errno));
		ssize_t n = ::recv(fd_, buf, size, 0);
		if (n > 0)
			return static_cast<std::size_t>(n);
		if (n == 0)
			return unavailable("the server closed the connection");
		if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
			return unavailable(std::strerror(errno));
	}
}

// tls_read -- SSL_read first: OpenSSL may hold decrypted bytes the socket
// no longer shows to poll
Result<std::size_t>
Transport::tls_read(char *buf, std::size_t size, Deadline deadline)
{
	SigpipeGuard no_sigpipe;
	for (;;) {
		ERR_clear_error();
		errno = 0;
		int n = SSL_read(ssl_, buf, static_cast<int>(std::min<std::size_t>(size, 1 << 30)));
		if (n > 0)
			return static_cast<std::size_t>(n);
		int saved_errno = errno;
		int error = SSL_get_error(ssl_, n);
		if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE)
			return tls_failure(error, saved_errno);
		int ready = wait_for(fd_, error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
		if (ready == 0)
			return std::size_t{0};
		if (ready < 0)
			return unavailable(std::string("poll: ") + std::strerror(errno));
	}
}

} // namespace pglease::detail::redis
