#include <hiredis/hiredis.h>
#include <sys/time.h>

#include "stores/hash_store.h"

namespace lagsight::stores {

namespace {

struct ReplyDeleter {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

timeval ToTimeval(std::chrono::milliseconds duration) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(duration.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((duration.count() % 1000) * 1000);
  return tv;
}

std::string ReplyError(const redisReply* reply) {
  return reply->type == REDIS_REPLY_ERROR ? std::string(reply->str, reply->len)
                                          : "unexpected reply type " + std::to_string(reply->type);
}

}  // namespace

struct RedisHashStore::Connection {
  struct ContextDeleter {
    void operator()(redisContext* context) const { redisFree(context); }
  };
  std::unique_ptr<redisContext, ContextDeleter> context;

  // The command's reply, or why there is none (the connection is then unusable).
  Result<Reply> Command(int argc, const char** argv, const std::size_t* lengths) {
    Reply reply(static_cast<redisReply*>(redisCommandArgv(context.get(), argc, argv, lengths)));
    if (!reply) {
      return Error{context->err != 0 ? std::string(context->errstr) : std::string("no reply")};
    }
    return reply;
  }
};

RedisHashStore::RedisHashStore(const config::PositionStoreConfig& config) : config_(config) {}

RedisHashStore::~RedisHashStore() = default;

Result<RedisHashStore::Connection*> RedisHashStore::Connected() {
  if (connection_) return connection_.get();
  const std::string where = config_.host + ":" + std::to_string(config_.port);
  auto connection = std::make_unique<Connection>();
  connection->context.reset(redisConnectWithTimeout(config_.host.c_str(), config_.port,
                                                    ToTimeval(config_.request_timeout)));
  if (!connection->context) return Error{"connecting to " + where + ": out of memory"};
  if (connection->context->err != 0) {
    return Error{"connecting to " + where + ": " + connection->context->errstr};
  }
  if (redisSetTimeout(connection->context.get(), ToTimeval(config_.request_timeout)) != REDIS_OK) {
    return Error{"connecting to " + where + ": cannot set the timeout"};
  }
  if (!config_.password.empty()) {
    std::vector<const char*> argv = {"AUTH"};
    std::vector<std::size_t> lengths = {4};
    if (!config_.username.empty()) {
      argv.push_back(config_.username.data());
      lengths.push_back(config_.username.size());
    }
    argv.push_back(config_.password.data());
    lengths.push_back(config_.password.size());
    auto reply = connection->Command(static_cast<int>(argv.size()), argv.data(), lengths.data());
    if (!reply) return Error{"authenticating at " + where + ": " + reply.error().message};
    if ((*reply)->type == REDIS_REPLY_ERROR) {
      return Error{"authenticating at " + where + ": " + ReplyError(reply->get())};
    }
  }
  if (config_.database != 0) {
    const std::string database = std::to_string(config_.database);
    const char* argv[] = {"SELECT", database.c_str()};
    const std::size_t lengths[] = {6, database.size()};
    auto reply = connection->Command(2, argv, lengths);
    if (!reply) return Error{"selecting database " + database + ": " + reply.error().message};
    if ((*reply)->type == REDIS_REPLY_ERROR) {
      return Error{"selecting database " + database + ": " + ReplyError(reply->get())};
    }
  }
  connection_ = std::move(connection);
  return connection_.get();
}

std::optional<Error> RedisHashStore::Ping() {
  auto connection = Connected();
  if (!connection) return connection.error();
  const char* argv[] = {"PING"};
  const std::size_t lengths[] = {4};
  auto reply = (*connection)->Command(1, argv, lengths);
  if (!reply) {
    connection_.reset();
    return Error{"PING: " + reply.error().message};
  }
  if ((*reply)->type == REDIS_REPLY_ERROR) return Error{"PING: " + ReplyError(reply->get())};
  return std::nullopt;
}

Result<std::map<std::string, std::string>> RedisHashStore::ReadHash(const std::string& key) {
  auto connection = Connected();
  if (!connection) return connection.error();
  // HLEN first: a hash too large is refused before its fields are transferred.
  const auto command = [&](const char* name) -> Result<Reply> {
    const char* argv[] = {name, key.data()};
    const std::size_t lengths[] = {std::char_traits<char>::length(name), key.size()};
    auto reply = (*connection)->Command(2, argv, lengths);
    if (!reply) {
      connection_.reset();  // a timeout or a broken connection: reconnect next time
      return Error{std::string(name) + " " + key + ": " + reply.error().message};
    }
    if ((*reply)->type == REDIS_REPLY_ERROR) {
      return Error{std::string(name) + " " + key + ": " + ReplyError(reply->get())};
    }
    return reply;
  };
  auto length = command("HLEN");
  if (!length) return length.error();
  if ((*length)->type != REDIS_REPLY_INTEGER) {
    return Error{"HLEN " + key + ": " + ReplyError(length->get())};
  }
  if ((*length)->integer > kMaxHashFields) {
    return Error{"hash " + key + " has " + std::to_string((*length)->integer) +
                 " fields; at most " + std::to_string(kMaxHashFields) + " are read"};
  }
  std::map<std::string, std::string> fields;
  if ((*length)->integer == 0) return fields;
  auto all = command("HGETALL");
  if (!all) return all.error();
  const redisReply* reply = all->get();
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements % 2 != 0) {
    return Error{"HGETALL " + key + ": " + ReplyError(reply)};
  }
  for (std::size_t i = 0; i + 1 < reply->elements; i += 2) {
    const redisReply* field = reply->element[i];
    const redisReply* value = reply->element[i + 1];
    if (field->type != REDIS_REPLY_STRING || value->type != REDIS_REPLY_STRING) continue;
    fields.emplace(std::string(field->str, field->len), std::string(value->str, value->len));
  }
  return fields;
}

}  // namespace lagsight::stores
