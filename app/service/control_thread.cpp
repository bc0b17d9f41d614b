// SPDX-License-Identifier: BSD-3-Clause
#include "control_thread.h"

#include <rte_lcore.h>

#include <cstring>

namespace flowcop::app {

std::unique_ptr<ControlThread> ControlThread::start(const std::string& name, std::function<void()> body,
                                                    std::string& error)
{
    std::unique_ptr<ControlThread> t(new ControlThread());
    t->_body = std::move(body);
    const int rc = rte_ctrl_thread_create(&t->_thread, name.c_str(), nullptr, trampoline, t.get());
    if (rc != 0) {
        error = "cannot start the " + name + " thread: " + std::strerror(rc < 0 ? -rc : rc);
        return nullptr;
    }
    t->_joinable = true;
    return t;
}

void* ControlThread::trampoline(void* self) noexcept
{
    auto* t = static_cast<ControlThread*>(self);
    try {
        t->_body();
    } catch (...) {
        t->_thrown = std::current_exception();
    }
    return nullptr;
}

void ControlThread::join() noexcept
{
    if (!_joinable)
        return;
    pthread_join(_thread, nullptr);
    _joinable = false;
}

ControlThread::~ControlThread()
{
    join();
}

bool on_control_cpus(const std::string& name, const std::function<void()>& body, std::string& error)
{
    auto t = ControlThread::start(name, body, error);
    if (!t)
        return false;
    t->join();
    if (t->_thrown)
        std::rethrow_exception(t->_thrown);
    return true;
}

} // namespace flowcop::app
