"""Shared invitee directories for the attendance tests."""

from __future__ import annotations

from typing import Any

import pytest

# Six invitees in two departments and two teams; 山田 is the leader.
TEAM: list[dict[str, Any]] = [
    {
        "user_id": "1",
        "display_name": "山田 太郎",
        "reading": "やまだ たろう",
        "groups": ["営業部", "Team A", "リーダー"],
    },
    {
        "user_id": "2",
        "display_name": "田中 花子",
        "reading": "タナカ ハナコ",
        "aliases": ["ハナちゃん"],
        "groups": ["営業部", "Team A"],
    },
    {"user_id": "3", "display_name": "佐藤 次郎", "reading": "さとう じろう", "groups": ["営業部", "Team A"]},
    {"user_id": "4", "display_name": "鈴木 一郎", "reading": "すずき いちろう", "groups": ["開発部", "Team B"]},
    {"user_id": "5", "display_name": "高橋 美咲", "reading": "たかはし みさき", "groups": ["開発部", "Team B"]},
    {
        "user_id": "6",
        "display_name": "伊藤 健",
        "reading": "いとう けん",
        "aliases": ["ケンさん"],
        "groups": ["開発部", "Team B"],
    },
]


def users(n: int) -> list[dict[str, Any]]:
    """n anonymous registered users u:1..u:n."""
    return [{"user_id": str(i), "display_name": f"User{i}"} for i in range(1, n + 1)]


@pytest.fixture
def team() -> list[dict[str, Any]]:
    return [dict(i) for i in TEAM]
