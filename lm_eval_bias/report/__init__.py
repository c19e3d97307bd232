"""Reading results files: reports, leaderboards and CI gates."""
