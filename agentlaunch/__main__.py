from agentlaunch.entry import main

main()
