// The one way project code includes Boost.Asio (and its SSL layer). Boost 1.74's
// awaitable.hpp uses std::exchange without including <utility>, which g++ 12 in C++20
// mode rejects unless <utility> comes first.
#pragma once

// clang-format off
#include <utility>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
// clang-format on

namespace mpcache::net {

namespace asio = boost::asio;
using TlsStream = asio::ssl::stream<asio::ip::tcp::socket>;

}  // namespace mpcache::net
