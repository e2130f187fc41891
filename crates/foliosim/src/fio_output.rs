//! fio's normal and JSON output (filled in next commit).
