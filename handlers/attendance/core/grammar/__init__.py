"""The rule-based grammar: folded utterance + mentions → rule type and parameters.

A table of matchers (table.py, in the order docs/attendance.md lists) over one shared parse state
(state.py: the folded text with ranges lowered and negated clauses blanked, the mentions, the list
helpers, the questions). Each matcher is a function `Utterance -> Reading | None` with one job:

0. unknown groups with a count (経理部から1人) → ask (groups.py);
   a concession (全員来てほしいけど無理なら3人) → the fallback count, BEST_SCORE, a question (concession.py);
   alternatives of named groups (山田&田中 か 佐藤&鈴木) and a disjunction of names
   (山田さんか田中さんのどちらか) → GROUP_ANY (named.py);
1. name lists before/after a required word → REQUIRED_PLUS_QUORUM, or ALL for 全員必須 (required.py);
2. group counts (営業部から2人 または 開発部から3人) → GROUP_ANY; an AND of quotas → ask (groups.py);
3. relative counts (全員-1, 1人欠けても, 過半数, 3分の2, 8割); 4. explicit k of n (5人中3人, 3/5);
5. ALL wording; 6. a plain threshold (最低3人); 7. ANY wording (誰か) (counts.py, words.py);
8. otherwise ambiguous → ANY with questions.

Counts are checked against the scope (counts.count): k = 1 becomes ANY, k = n becomes ALL, an
impossible count becomes ANY with a question. Nothing here guesses a name. The lexicon (words and
patterns) is data, lexicon.yaml, compiled on the first parse (vocabulary.py).
"""

from __future__ import annotations

from handlers.attendance.core.grammar.state import BLANK, State, Utterance
from handlers.attendance.core.grammar.table import MATCHERS, Matcher, read

__all__ = ["BLANK", "MATCHERS", "Matcher", "State", "Utterance", "read"]
