#include "app/tasks/task_manager.h"

#include "core/cancelled.h"

#include <algorithm>

namespace headlab::app {

TaskManager::TaskManager(std::function<void(int)> configure_thread) : configure_thread_(std::move(configure_thread)) {}

TaskManager::~TaskManager() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
    for (auto& [name, lane] : lanes_) {
      for (auto& e : lane.queue) {
        e.task->supersede();
        e.task->set_state(TaskState::Stopped);
      }
      lane.queue.clear();
      if (lane.running) lane.running->supersede();
      if (lane.thread.joinable()) threads.push_back(std::move(lane.thread));
    }
    for (auto& t : finished_) threads.push_back(std::move(t));
    finished_.clear();
  }
  for (auto& t : threads) t.join();
}

std::shared_ptr<Task> TaskManager::start(TaskOptions options, Work work) {
  std::vector<std::thread> done;
  std::shared_ptr<Task> task;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (quit_) throw std::logic_error("the task system is shutting down");
    task = std::make_shared<Task>(options, ++next_id_);
    const std::string name = options.lane.empty() ? "#" + std::to_string(task->id()) : options.lane;
    Lane& lane = lanes_[name];
    auto replaced = [&](const std::shared_ptr<Task>& t) {
      const auto& kinds = options.replaces;
      return std::find(kinds.begin(), kinds.end(), t->options().kind) != kinds.end();
    };
    for (auto it = lane.queue.begin(); it != lane.queue.end();) {
      if (replaced(it->task)) {
        it->task->supersede();
        it->task->set_state(TaskState::Stopped);
        it = lane.queue.erase(it);
      } else {
        ++it;
      }
    }
    if (lane.running && replaced(lane.running)) lane.running->supersede();
    lane.queue.push_back({task, std::move(work)});
    if (!lane.alive) {
      // The lane's last thread has left its loop (or there was none): a new one takes the work.
      if (lane.thread.joinable()) finished_.push_back(std::move(lane.thread));
      lane.alive = true;
      lane.thread = std::thread([this, name] { lane_loop(name); });
    }
    done.swap(finished_);
  }
  for (auto& t : done) t.join();  // threads that have left their loop: returns at once
  return task;
}

void TaskManager::lane_loop(const std::string& name) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    Lane& lane = lanes_.at(name);  // std::map nodes stay put
    if (quit_ || lane.queue.empty()) {
      lane.alive = false;
      // A lane of one task is not used again: its entry goes (its thread is joined later).
      if (name[0] == '#' && !quit_) {
        finished_.push_back(std::move(lane.thread));
        lanes_.erase(name);
      }
      changed_.notify_all();
      return;
    }
    Entry entry = std::move(lane.queue.front());
    lane.queue.pop_front();
    lane.running = entry.task;
    lock.unlock();
    run_one(entry);
    lock.lock();
    lanes_.at(name).running.reset();
    changed_.notify_all();
  }
}

void TaskManager::run_one(Entry& entry) {
  Task& task = *entry.task;
  if (task.interrupted()) {  // stopped while queued: never starts
    task.set_state(TaskState::Stopped);
    return;
  }
  if (configure_thread_) configure_thread_(task.options().threads);
  task.set_state(TaskState::Running);
  try {
    std::shared_ptr<const void> result = entry.work(task);
    if (result) task.publish_any(std::move(result));
    // Work that returns normally after a Stop (a dataset run keeps what is complete) is stopped.
    task.set_state(task.interrupted() ? TaskState::Stopped : TaskState::Done);
  } catch (const core::Cancelled&) {
    task.set_state(TaskState::Stopped);
  } catch (const std::exception& e) {
    task.set_state(TaskState::Failed, e.what());
  } catch (...) {
    task.set_state(TaskState::Failed, "an unknown error");
  }
  entry.work = nullptr;  // what the work captured goes now, on its thread
}

std::vector<std::shared_ptr<Task>> TaskManager::active() const {
  std::vector<std::shared_ptr<Task>> out;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [name, lane] : lanes_) {
    if (lane.running && lane.running->options().shown) out.push_back(lane.running);
    for (const auto& e : lane.queue)
      if (e.task->options().shown) out.push_back(e.task);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->id() < b->id(); });
  return out;
}

bool TaskManager::idle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [name, lane] : lanes_)
    if (lane.running || !lane.queue.empty()) return false;
  return true;
}

bool TaskManager::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, timeout, [this] {
    for (const auto& [name, lane] : lanes_)
      if (lane.running || !lane.queue.empty()) return false;
    return true;
  });
}

int TaskManager::threads_running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int n = 0;
  for (const auto& [name, lane] : lanes_) n += lane.alive ? 1 : 0;
  return n;
}

}  // namespace headlab::app
