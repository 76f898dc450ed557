// detail/tls.cpp -- the TLS material of the providers' URLs (detail/tls.hpp
// says what is accepted and why).
#include "detail/tls.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

#include "detail/endpoints.hpp"

namespace pglease::detail {

namespace {

// unreadable -- why path cannot be read as a file, or ""
std::string
unreadable(const std::string &path)
{
	struct stat st {};
	if (::stat(path.c_str(), &st) != 0)
		return std::strerror(errno);
	if (!S_ISREG(st.st_mode))
		return "not a regular file";
	errno = 0;
	if (std::ifstream file(path); !file.good())
		return errno != 0 ? std::strerror(errno) : "cannot be opened";
	return "";
}

} // namespace

std::string
tls_query_problem(std::string_view query, TlsFiles &files)
{
	while (!query.empty()) {
		auto amp = query.find('&');
		std::string_view pair = query.substr(0, amp);
		query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
		auto eq = pair.find('=');
		std::string name(pair.substr(0, eq)), value;
		if (eq == std::string_view::npos || !percent_decoded(pair.substr(eq + 1), value) || value.empty())
			return "query parameter \"" + name + "\" needs a value (a path: " + name + "=/path)";
		if (name == "cacert")
			files.ca_file = value;
		else if (name == "cert")
			files.cert_file = value;
		else if (name == "key")
			files.key_file = value;
		else
			return "unknown query parameter \"" + name + "\" (TLS takes cacert=, cert=, key=)";
	}
	return "";
}

void
tls_files_from(const ClientOptions &options, TlsFiles &files)
{
	if (files.ca_file.empty())
		files.ca_file = options.tls_ca_file;
	if (files.cert_file.empty())
		files.cert_file = options.tls_cert_file;
	if (files.key_file.empty())
		files.key_file = options.tls_key_file;
}

std::string
tls_files_problem(const TlsFiles &files)
{
	if (files.cert_file.empty() != files.key_file.empty())
		return "a client certificate needs both cert= and key= (or tls_cert_file and tls_key_file)";
	for (auto [what, path] :
	     {std::pair{"CA (cacert)", &files.ca_file}, std::pair{"client certificate (cert)", &files.cert_file},
	      std::pair{"client key (key)", &files.key_file}})
		if (!path->empty())
			if (std::string why = unreadable(*path); !why.empty())
				return std::string("cannot read the ") + what + " file \"" + *path + "\": " + why;
	return "";
}

} // namespace pglease::detail
