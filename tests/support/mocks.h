// mocks.h — GoogleMock mocks of every interface in core/include/lcc.
//
// Methods returning Result<T> have no default value: give every call you expect an
// action (WillOnce(Return(...))), or set DefaultValue<Result<T>>::Set(...).
#pragma once

#include <gmock/gmock.h>

#include "lcc/byte_sink.h"
#include "lcc/clock.h"
#include "lcc/content_store.h"
#include "lcc/env.h"
#include "lcc/exporter.h"
#include "lcc/fetcher.h"
#include "lcc/logger.h"
#include "lcc/provider_store.h"
#include "lcc/queue_store.h"

namespace lcc::testing {

class MockClock : public Clock {
 public:
  MOCK_METHOD(WallTime, now, (), (const, override));
  MOCK_METHOD(MonoTime, monoNow, (), (const, override));
  MOCK_METHOD(TimerId, schedule, (Millis delay, std::function<void()> fn), (override));
  MOCK_METHOD(bool, cancel, (TimerId id), (override));
};

class MockWritableFile : public WritableFile {
 public:
  MOCK_METHOD(Status, append, (std::string_view data), (override));
  MOCK_METHOD(Status, sync, (), (override));
  MOCK_METHOD(Status, close, (), (override));
  MOCK_METHOD(std::uint64_t, size, (), (const, override));
};

class MockReadableFile : public ReadableFile {
 public:
  MOCK_METHOD(Result<std::size_t>, read, (std::uint64_t offset, std::size_t n, char* buf), (override));
  MOCK_METHOD(Result<std::uint64_t>, size, (), (override));
};

class MockEnv : public Env {
 public:
  MOCK_METHOD(Result<std::unique_ptr<WritableFile>>, openWritable, (const std::string& path, OpenMode mode),
              (override));
  MOCK_METHOD(Result<std::unique_ptr<ReadableFile>>, openReadable, (const std::string& path), (override));
  MOCK_METHOD(Status, rename, (const std::string& from, const std::string& to), (override));
  MOCK_METHOD(Status, removeFile, (const std::string& path), (override));
  MOCK_METHOD(Status, truncate, (const std::string& path, std::uint64_t size), (override));
  MOCK_METHOD(Status, createDirs, (const std::string& path, const DirOptions& options), (override));
  using Env::createDirs;
  MOCK_METHOD(Status, syncDir, (const std::string& dir), (override));
  MOCK_METHOD(Result<std::vector<std::string>>, listDir, (const std::string& dir), (override));
  MOCK_METHOD(bool, exists, (const std::string& path), (override));
  MOCK_METHOD(Result<std::uint64_t>, fileSize, (const std::string& path), (override));
  MOCK_METHOD(Result<std::uint64_t>, freeSpace, (const std::string& path), (override));
  MOCK_METHOD(Status, setAttribute, (const std::string& path, const std::string& name, std::string_view value),
              (override));
  MOCK_METHOD(Result<std::optional<std::string>>, getAttribute, (const std::string& path, const std::string& name),
              (override));
};

class MockLogger : public Logger {
 public:
  MOCK_METHOD(void, log, (LogLevel level, std::string_view message), (override));
};

class MockByteSink : public ByteSink {
 public:
  MOCK_METHOD(Status, write, (std::string_view bytes), (override));
  MOCK_METHOD(Status, flush, (), (override));
};

class MockContentSource : public ContentSource {
 public:
  MOCK_METHOD(std::uint64_t, size, (), (const, override));
  MOCK_METHOD(Result<std::size_t>, read, (char* buf, std::size_t n), (override));
};

class MockQueueStore : public QueueStore {
 public:
  MOCK_METHOD(const StoreOpenInfo&, openInfo, (), (const, override));
  MOCK_METHOD(Status, apply, (const QueueBatch& batch), (override));
  MOCK_METHOD(Status, sync, (), (override));
  MOCK_METHOD(Status, close, (), (override));
  MOCK_METHOD(Result<std::optional<QueueEntry>>, getEntry, (std::string_view key), (override));
  MOCK_METHOD(Status, scanEntries, (const std::function<bool(const QueueEntry&)>& fn), (override));
  MOCK_METHOD(Result<std::uint64_t>, entryCount, (), (override));
  MOCK_METHOD(Result<std::optional<PSetRecord>>, getPSet, (PSetId pset, TimeSlot slot), (override));
  MOCK_METHOD(Status, scanPSets, (std::optional<TimeSlot> slot, const std::function<bool(const PSetRecord&)>& fn),
              (override));
  MOCK_METHOD(Status, scanDeletes,
              (std::optional<std::string> machine, const std::function<bool(const DeleteRequest&)>& fn), (override));
  MOCK_METHOD(Result<std::optional<std::string>>, getMeta, (std::string_view key), (override));
};

class MockContentStore : public ContentStore {
 public:
  MOCK_METHOD(const StoreOpenInfo&, openInfo, (), (const, override));
  MOCK_METHOD(Status, apply, (const ContentBatch& batch), (override));
  MOCK_METHOD(Status, sync, (), (override));
  MOCK_METHOD(Status, close, (), (override));
  MOCK_METHOD(Result<std::optional<ContentRecord>>, get, (std::string_view encoded_key), (override));
  MOCK_METHOD(Status, scanProvider, (ProviderId pid, const std::function<bool(const ContentRecord&)>& fn),
              (override));
  MOCK_METHOD(Status, scanSince,
              (ChangeSeq after, const ContentFilter& filter, const std::function<bool(const ContentRecord&)>& fn),
              (override));
  MOCK_METHOD(Result<ChangeSeq>, maxSeq, (), (override));
  MOCK_METHOD(Result<std::uint64_t>, count, (), (override));
  MOCK_METHOD(Result<std::optional<std::string>>, getMeta, (std::string_view key), (override));
};

class MockProviderStore : public ProviderStore {
 public:
  MOCK_METHOD(const StoreOpenInfo&, openInfo, (), (const, override));
  MOCK_METHOD(Result<ProviderId>, create, (const ProviderRecord& record), (override));
  MOCK_METHOD(Result<std::optional<ProviderRecord>>, get, (ProviderId id), (override));
  MOCK_METHOD(Status, put, (const ProviderRecord& record, const WriteOptions& options), (override));
  MOCK_METHOD(Status, modify,
              (ProviderId id, const std::function<Status(ProviderRecord&)>& fn, const WriteOptions& options),
              (override));
  using ProviderStore::modify;
  using ProviderStore::put;
  MOCK_METHOD(Status, remove, (ProviderId id), (override));
  MOCK_METHOD(Status, scan, (const std::function<bool(const ProviderRecord&)>& fn), (override));
  MOCK_METHOD(Status, sync, (), (override));
  MOCK_METHOD(Status, close, (), (override));
};

class MockFetcher : public Fetcher {
 public:
  MOCK_METHOD(Status, start, (const FetchRequest& request, FetchDone done), (override));
  MOCK_METHOD(void, cancel, (std::uint64_t id), (override));
  MOCK_METHOD(std::size_t, inFlight, (), (const, override));
  MOCK_METHOD(void, stop, (), (override));
};

class MockExportStream : public ExportStream {
 public:
  MOCK_METHOD(Status, add, (const ContentRecord& record, ContentSource* content), (override));
  MOCK_METHOD(Status, finish, (), (override));
};

class MockExporter : public Exporter {
 public:
  MOCK_METHOD(std::string_view, format, (), (const, override));
  MOCK_METHOD(std::string_view, contentType, (), (const, override));
  MOCK_METHOD(bool, alwaysContent, (), (const, override));
  MOCK_METHOD(Result<std::unique_ptr<ExportStream>>, begin, (ByteSink & sink, const ExportHeader& header),
              (override));
};

}  // namespace lcc::testing
